//! The audit log reader of `serve` (`[audit] log_path`): follows a kube-apiserver audit log
//! (`--audit-log-path`, `--audit-log-format=json`, one `audit.k8s.io/v1` `Event` a line) as
//! `tail -F` does, and sends the successful writes it holds to the engine.
//!
//! It lives here, with the wiring of `serve`, rather than in `driftd-cluster`: it reads a
//! local file and speaks to no API server, and only `serve` runs it.
//!
//! It starts at the end of the file (what was written before driftd started is history,
//! not drift it is about to see), polls for new lines, and reopens the path when the file
//! was rotated (another file is at the path: kube-apiserver's lumberjack renames the log
//! and starts a new one) or truncated (shorter than what was read). A line longer than the
//! bound is skipped whole; a line that is not an event is counted in the log, never quoted
//! (it may hold Secret values).

use driftd_core::audit::{parse_event_line, AuditRecord};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

/// How often the file is checked for new lines.
pub const POLL: Duration = Duration::from_millis(250);

/// The file being read and where.
struct Open {
    file: File,
    /// (device, inode): another pair at the path means the file was rotated.
    identity: (u64, u64),
    offset: u64,
}

/// Follows `path` and sends its writes to `records` until `stop` says so (or the engine is
/// gone). Lines longer than `max_line` bytes are skipped.
pub async fn follow(
    path: PathBuf,
    max_line: usize,
    poll: Duration,
    records: mpsc::Sender<Vec<AuditRecord>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut reader = Follower::new(path, max_line);
    reader.open(true);
    loop {
        let batch = reader.read_new();
        if !batch.is_empty() && records.send(batch).await.is_err() {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// The state of a followed file, read by [`Follower::read_new`].
pub struct Follower {
    path: PathBuf,
    max_line: usize,
    open: Option<Open>,
    /// The start of a line whose end is not written yet.
    partial: Vec<u8>,
    /// Skipping the rest of a line over `max_line`.
    skipping: bool,
    /// Whether the missing file was reported (once, until it appears).
    missing_said: bool,
}

impl Follower {
    pub fn new(path: PathBuf, max_line: usize) -> Follower {
        Follower {
            path,
            max_line,
            open: None,
            partial: Vec::new(),
            skipping: false,
            missing_said: false,
        }
    }

    /// Opens the path, at its end (`at_end`) or its start.
    fn open(&mut self, at_end: bool) {
        self.partial.clear();
        self.skipping = false;
        self.open = match open(&self.path, at_end) {
            Ok(open) => {
                self.missing_said = false;
                Some(open)
            }
            Err(err) => {
                if !self.missing_said {
                    tracing::warn!(path = %self.path.display(), error = %err, "cannot open the audit log (audit.log_path); retrying");
                    self.missing_said = true;
                }
                None
            }
        };
    }

    /// The writes of the lines completed since the last call; follows rotation and
    /// truncation.
    pub fn read_new(&mut self) -> Vec<AuditRecord> {
        if self.open.is_none() {
            // Appeared since: a new file is read from its start.
            self.open(false);
        }
        let mut records = Vec::new();
        let Some(current) = &mut self.open else {
            return records;
        };
        let at_path = std::fs::metadata(&self.path).ok();
        let rotated = at_path
            .as_ref()
            .is_some_and(|m| (m.dev(), m.ino()) != current.identity);
        let truncated = !rotated && at_path.as_ref().is_some_and(|m| m.len() < current.offset);
        if truncated {
            tracing::info!(path = %self.path.display(), "audit log truncated; reading it from its start");
            let _ = current.file.seek(SeekFrom::Start(0));
            current.offset = 0;
            self.partial.clear();
            self.skipping = false;
        }
        // What the old file got before it was rotated is read before the new one.
        self.read_lines(&mut records);
        if rotated {
            tracing::info!(path = %self.path.display(), "audit log rotated; reading the new file");
            self.open(false);
            self.read_lines(&mut records);
        }
        records
    }

    fn read_lines(&mut self, records: &mut Vec<AuditRecord>) {
        let Some(current) = &mut self.open else {
            return;
        };
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match current.file.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(err) => {
                    tracing::warn!(path = %self.path.display(), error = %err, "cannot read the audit log");
                    return;
                }
            };
            current.offset += n as u64;
            let mut rest = &buf[..n];
            while let Some(end) = rest.iter().position(|&b| b == b'\n') {
                let (line, after) = rest.split_at(end);
                if !self.skipping {
                    self.partial.extend_from_slice(line);
                    if self.partial.len() <= self.max_line {
                        take_line(&self.partial, &self.path, records);
                    }
                }
                self.partial.clear();
                self.skipping = false;
                rest = &after[1..];
            }
            if !self.skipping {
                self.partial.extend_from_slice(rest);
                if self.partial.len() > self.max_line {
                    tracing::warn!(path = %self.path.display(), max = self.max_line, "audit log line over the bound (audit.max_body_bytes); skipped");
                    self.partial.clear();
                    self.skipping = true;
                }
            }
        }
    }
}

fn open(path: &Path, at_end: bool) -> std::io::Result<Open> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let offset = if at_end {
        file.seek(SeekFrom::End(0))?
    } else {
        0
    };
    Ok(Open {
        file,
        identity: (meta.dev(), meta.ino()),
        offset,
    })
}

fn take_line(line: &[u8], path: &Path, records: &mut Vec<AuditRecord>) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match parse_event_line(line) {
        Ok(Some(record)) => records.push(record),
        Ok(None) => {}
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "audit log line skipped")
        }
    }
}

#[cfg(test)]
mod tests;
