//! `driftd demo`: simulator + example app + scripted drift, for newcomers.
