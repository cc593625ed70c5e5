//! The drift index and the engine that keeps it current.
