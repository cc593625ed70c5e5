//! Reading the input: files, folders walked recursively, standard input; text checks
//! (UTF-8, BOM) and the size limit of one load, all files together.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::yaml::{split_documents, Format};
use super::{ManifestError, RawInput, STDIN_NAME};

/// One input to read, in order.
enum Source {
    Stdin,
    File(PathBuf),
}

/// Reads every path (`-` is standard input, folders are walked) into documents, refusing
/// an input larger than `max_total` bytes in all before reading any file.
pub(super) fn read_paths(paths: &[PathBuf], max_total: usize) -> Result<RawInput, ManifestError> {
    let mut sources = Vec::new();
    let mut stdin_used = false;
    for path in paths {
        if path.as_os_str() == "-" {
            if stdin_used {
                return Err(ManifestError::new(
                    STDIN_NAME,
                    0,
                    None,
                    "standard input (-) given more than once",
                ));
            }
            stdin_used = true;
            sources.push(Source::Stdin);
            continue;
        }
        let display = path.display().to_string();
        let meta = std::fs::metadata(path)
            .map_err(|e| ManifestError::new(&display, 0, None, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            let mut visited = HashSet::new();
            walk(path, &mut files, &mut visited)?;
            files.sort();
            sources.extend(files.into_iter().map(Source::File));
        } else {
            sources.push(Source::File(path.clone()));
        }
    }

    // The files' sizes first, so an oversized input is refused before anything is read.
    let mut sizes = Vec::with_capacity(sources.len());
    for source in &sources {
        sizes.push(match source {
            Source::Stdin => 0,
            Source::File(path) => std::fs::metadata(path)
                .map_err(|e| {
                    ManifestError::new(
                        &path.display().to_string(),
                        0,
                        None,
                        format!("cannot read: {e}"),
                    )
                })?
                .len(),
        });
    }
    let total: u64 = sizes.iter().sum();
    if total > max_total as u64 {
        let mut running = 0;
        let (crossing, _) = sources
            .iter()
            .zip(&sizes)
            .find(|(_, size)| {
                running += **size;
                running > max_total as u64
            })
            .expect("the sizes add up to the total");
        let Source::File(path) = crossing else {
            unreachable!("standard input counts 0 before it is read")
        };
        return Err(ManifestError::new(
            &path.display().to_string(),
            0,
            None,
            format!(
                "the input is {} in {} files, more than the limit of {} for all files together",
                mib(total),
                sources.len(),
                mib(max_total as u64)
            ),
        ));
    }

    let mut input = RawInput::default();
    for source in sources {
        match source {
            Source::Stdin => {
                let budget = max_total as u64 - total;
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .take(budget + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| {
                        ManifestError::new(STDIN_NAME, 0, None, format!("cannot read: {e}"))
                    })?;
                if bytes.len() as u64 > budget {
                    return Err(too_large(STDIN_NAME, max_total));
                }
                let text = decode(bytes, STDIN_NAME)?;
                input.extend(split_documents(
                    &text,
                    STDIN_NAME,
                    Format::Sniff,
                    max_total,
                )?);
            }
            Source::File(path) => input.extend(read_file(&path, max_total)?),
        }
    }
    Ok(input)
}

/// `n` bytes as a person reads a size: `64 MiB`, `1.5 KiB`, `300 bytes`.
fn mib(n: u64) -> String {
    let (amount, unit) = match n {
        n if n >= 1 << 20 => (n as f64 / (1u64 << 20) as f64, "MiB"),
        n if n >= 1 << 10 => (n as f64 / (1u64 << 10) as f64, "KiB"),
        n => return format!("{n} bytes"),
    };
    if amount.fract() == 0.0 {
        format!("{amount:.0} {unit}")
    } else {
        format!("{amount:.1} {unit}")
    }
}

fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    visited: &mut HashSet<PathBuf>,
) -> Result<(), ManifestError> {
    let display = dir.display().to_string();
    let io_err = |e: std::io::Error| {
        ManifestError::new(&display, 0, None, format!("cannot read folder: {e}"))
    };
    // A symlink loop would otherwise walk forever.
    let canonical = std::fs::canonicalize(dir).map_err(io_err)?;
    if !visited.insert(canonical) {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        // Hidden entries (.git, .github workflows, editor swap files) are never manifests;
        // kubectl -R would read them and fail on a CI config. Named explicitly, they are read.
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            continue;
        }
        let meta = std::fs::metadata(&path).map_err(|e| {
            ManifestError::new(
                &path.display().to_string(),
                0,
                None,
                format!("cannot read: {e}"),
            )
        })?;
        if meta.is_dir() {
            walk(&path, files, visited)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            files.push(path);
        }
    }
    Ok(())
}

fn read_file(path: &Path, max: usize) -> Result<RawInput, ManifestError> {
    let display = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| ManifestError::new(&display, 0, None, format!("cannot read: {e}")))?;
    if bytes.len() > max {
        // Grew since its size was taken.
        return Err(too_large(&display, max));
    }
    let text = decode(bytes, &display)?;
    let format = if path.extension().and_then(|e| e.to_str()) == Some("json") {
        Format::Json
    } else {
        Format::Sniff
    };
    split_documents(&text, &display, format, max)
}

pub(super) fn too_large(file: &str, max: usize) -> ManifestError {
    ManifestError::new(
        file,
        0,
        None,
        format!("input is larger than {}", mib(max as u64)),
    )
}

fn decode(mut bytes: Vec<u8>, file: &str) -> Result<String, ManifestError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        ManifestError::new(
            file,
            0,
            None,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}
