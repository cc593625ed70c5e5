//! Reading the input: files, folders walked recursively, standard input, each read as a
//! stream of documents (JSON or YAML, told apart as kubectl does) with the size limits of
//! [`super::limits`]; the total limit is checked from the files' sizes before any is read.

use std::collections::HashSet;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::json_stream::{read_json, JsonFailure};
use super::limits::{mib, Meter};
use super::yaml_stream::{read_yaml, YamlLimits};
use super::{LoadOptions, ManifestError, RawInput, STDIN_NAME};

/// One input to read, in order.
enum Source {
    Stdin,
    File(PathBuf),
}

/// Reads every path (`-` is standard input, folders are walked) into documents, refusing
/// an input larger than the total limit in all before reading any file, and any document
/// or List item over the per-object limit as soon as reading crosses it.
pub(super) fn read_paths(
    paths: &[PathBuf],
    options: &LoadOptions,
) -> Result<RawInput, ManifestError> {
    let max_total = options.max_total_bytes;
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
    let mut consumed = 0;
    for source in sources {
        let room = (max_total as u64).saturating_sub(consumed);
        consumed += match source {
            Source::Stdin => read_source(
                &mut std::io::stdin().lock(),
                STDIN_NAME,
                Format::Sniff,
                options,
                room,
                &mut input,
            )?,
            Source::File(path) => {
                let display = path.display().to_string();
                let file = std::fs::File::open(&path).map_err(|e| {
                    ManifestError::new(&display, 0, None, format!("cannot read: {e}"))
                })?;
                let format = if path.extension().and_then(|e| e.to_str()) == Some("json") {
                    Format::Json
                } else {
                    Format::Sniff
                };
                let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
                read_source(&mut reader, &display, format, options, room, &mut input)?
            }
        };
    }
    Ok(input)
}

/// How a source's text is told apart.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Format {
    Json,
    /// JSON if the first non-blank character opens an object or array, else YAML: the same
    /// sniffing as apimachinery's YAMLOrJSONDecoder used by kubectl.
    Sniff,
}

/// Reads one source's documents into `input`, taking at most `room` bytes; returns the
/// bytes taken.
pub(super) fn read_source<R: BufRead>(
    reader: &mut R,
    file: &str,
    format: Format,
    options: &LoadOptions,
    room: u64,
    input: &mut RawInput,
) -> Result<u64, ManifestError> {
    let max_object = options.max_object_bytes;
    let max_total = options.max_total_bytes;
    let io_error =
        |e: std::io::Error| ManifestError::new(file, 0, None, format!("cannot read: {e}"));
    // A byte order mark is not text; kubectl skips it too.
    let mut bom = 0;
    if reader
        .fill_buf()
        .map_err(io_error)?
        .starts_with(b"\xEF\xBB\xBF")
    {
        reader.consume(3);
        bom = 3;
    }
    // The leading blanks are kept (they count as lines) and the first other byte decides.
    let mut blanks = Vec::new();
    let first = loop {
        let buf = reader.fill_buf().map_err(io_error)?;
        let Some(&byte) = buf.first() else {
            break None;
        };
        if !byte.is_ascii_whitespace() || blanks.len() > max_object {
            break Some(byte);
        }
        blanks.push(byte);
        reader.consume(1);
    };
    let mut reader = std::io::Cursor::new(blanks).chain(reader);
    let looks_json = matches!(first, Some(b'{' | b'['));
    let yaml_limits = YamlLimits {
        max_object,
        max_total,
        room: room.saturating_sub(bom),
    };
    if format == Format::Sniff && !looks_json {
        return Ok(bom + read_yaml(&mut reader, file, &yaml_limits, input)?);
    }
    let meter = Meter::new(max_object, room.saturating_sub(bom));
    let mark = input.mark();
    match read_json(
        &mut reader,
        file,
        meter.clone(),
        max_total,
        format == Format::Sniff,
        input,
    ) {
        Ok(()) => Ok(bom + meter.read()),
        Err(JsonFailure::Other(error)) => Err(error),
        // A YAML flow mapping (`{a: b}`) also starts with `{`: when the JSON reading fails
        // but YAML reads it, take that; otherwise the JSON error is the one that helps.
        Err(JsonFailure::FirstDocument { error, taken }) => {
            input.rewind(mark);
            let mark = input.mark();
            let mut again = std::io::Cursor::new(taken).chain(reader);
            match read_yaml(&mut again, file, &yaml_limits, input) {
                Ok(taken) => Ok(bom + taken),
                Err(_) => {
                    input.rewind(mark);
                    Err(error)
                }
            }
        }
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
