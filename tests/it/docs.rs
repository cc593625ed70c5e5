//! The user's guide holds together: every relative link in the README, the pages under
//! `docs/` and `benches/RESULTS.md` reaches a file that exists and, for a `#fragment` into a
//! Markdown file, a heading of it (as GitHub makes anchors); and the README's performance
//! table only quotes figures that `benches/RESULTS.md` records with their command, date and
//! commit, so the two cannot drift apart again.

use crate::dashboards::repo_file;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The Markdown files whose links are checked, relative to the repository root.
fn checked_files() -> Vec<String> {
    let mut files = vec!["README.md".to_string(), "benches/RESULTS.md".to_string()];
    let mut pages: Vec<String> = std::fs::read_dir(repo_file("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ is readable").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_file(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The lines of a Markdown text outside fenced code blocks: a `# comment` in a shell block is
/// not a heading, and `[a](b)` in a code sample is not a link.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"]
            .into_iter()
            .find(|marker| trimmed.starts_with(marker));
        match (fence, marker) {
            (None, Some(marker)) => fence = Some(marker),
            (Some(open), Some(marker)) if open == marker => fence = None,
            (None, None) => lines.push((index + 1, line)),
            _ => {}
        }
    }
    lines
}

/// A line with its inline code spans removed: `` `[x](y)` `` shows a link, it is not one.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                // An unclosed run of backticks is literal text, as CommonMark reads it.
                out.push_str(&rest[start..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The anchor GitHub gives a heading: lower case, every character but letters, digits,
/// `-`, `_` and spaces dropped, spaces turned into `-`; a repeated anchor gets `-1`, `-2`...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let base: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Every inline link target `[text](target)` of a text, with its line number.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (number, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push((number, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    targets
}

/// `base/../x` as a path inside the repository, or None when it climbs out of it.
fn inside_repository(from_dir: &Path, target: &str) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    for component in from_dir.join(target).components() {
        match component {
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    Some(path)
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    for file in checked_files() {
        let text = read(&file);
        let dir = Path::new(&file).parent().unwrap_or(Path::new(""));
        for (line, target) in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                Some(PathBuf::from(&file))
            } else {
                inside_repository(dir, path)
            };
            let Some(resolved) = resolved else {
                broken.push(format!("{file}:{line}: {target} leaves the repository"));
                continue;
            };
            let shown = resolved.to_string_lossy().into_owned();
            if !repo_file(&shown).exists() {
                broken.push(format!("{file}:{line}: {target}: no {shown}"));
                continue;
            }
            if let Some(fragment) = fragment.filter(|_| shown.ends_with(".md")) {
                if !anchors(&read(&shown)).contains(fragment) {
                    broken.push(format!(
                        "{file}:{line}: {target}: no heading #{fragment} in {shown}"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_performance_table_quotes_only_figures_results_md_records() {
    let readme = read("README.md");
    let results = read("benches/RESULTS.md");
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|line| *line != "## Performance")
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .collect();
    let rows: Vec<&str> = section
        .iter()
        .copied()
        .filter(|line| line.starts_with('|') && !line.starts_with("|---"))
        .skip(1)
        .collect();
    assert!(!rows.is_empty(), "the README has no performance table");
    let mut unrecorded = Vec::new();
    for row in rows {
        for cell in row.trim_matches('|').split('|').skip(1).map(str::trim) {
            if !results.contains(cell) {
                unrecorded.push(cell.to_string());
            }
        }
    }
    assert!(
        unrecorded.is_empty(),
        "README figures not in benches/RESULTS.md: {unrecorded:?}"
    );
}

#[test]
fn headings_in_code_blocks_make_no_anchor_and_code_spans_no_link() {
    let text = "# Title\n```sh\n# not a heading\n```\n## A `b`: c (d, e)\n## A `b`: c (d, e)\nsee `[x](y)` and [z](#title)\n";
    let found = anchors(text);
    let expected: BTreeSet<String> = ["title", "a-b-c-d-e", "a-b-c-d-e-1"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
    assert_eq!(link_targets(text), vec![(7, "#title".to_string())]);
}
