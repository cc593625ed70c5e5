//! Tables and ages as the listing commands print them: kubectl-style output, upper-case
//! headers, columns padded with three spaces, ages as kubectl prints them (`5m`, `3d2h`).

use driftd_core::text::escape_control;
use jiff::Timestamp;

/// One table row of `cells`.
pub fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// First line of a message, so one revision stays one table row.
pub fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or("");
    if message.lines().nth(1).is_some() {
        format!("{line} ...")
    } else {
        line.to_string()
    }
}

/// Left-aligned columns separated by three spaces (kubectl's tabwriter padding); the last
/// column is not padded. Control characters in cells (names, messages and values come from
/// whoever can commit or write to the cluster) are shown escaped, so no cell can move the
/// cursor, forge a row or recolour the terminal.
pub fn render_table(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape_control(c).into_owned()).collect())
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < r.len() {
                let pad = widths[c] - cell.chars().count() + 3;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Age of `then` at `now`, written as kubectl writes AGE
/// (apimachinery `duration.HumanDuration`: `45s`, `4m5s`, `25m`, `5h3m`, `3d2h`, `40d`, `2y10d`).
pub fn human_age(now: Timestamp, then: Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_match_kubectl() {
        let now = Timestamp::from_second(1_000_000_000).unwrap();
        let ago = |s: i64| human_age(now, Timestamp::from_second(1_000_000_000 - s).unwrap());
        assert_eq!(ago(-5), "<invalid>");
        assert_eq!(ago(0), "0s");
        assert_eq!(ago(119), "119s");
        assert_eq!(ago(245), "4m5s");
        assert_eq!(ago(240), "4m");
        assert_eq!(ago(25 * 60), "25m");
        assert_eq!(ago(5 * 3600 + 3 * 60), "5h3m");
        assert_eq!(ago(20 * 3600), "20h");
        assert_eq!(ago(3 * 86400 + 2 * 3600), "3d2h");
        assert_eq!(ago(40 * 86400), "40d");
        assert_eq!(ago(740 * 86400), "2y10d");
    }

    #[test]
    fn control_characters_in_cells_are_escaped_and_columns_stay_aligned() {
        let t = render_table(&[
            row(&["NAME", "MESSAGE"]),
            row(&["web\u{1b}[31m", "fix\rFORGED\tx"]),
            row(&["db", "ok"]),
        ]);
        assert_eq!(
            t,
            "NAME          MESSAGE\nweb\\x1b[31m   fix\\rFORGED\\tx\ndb            ok\n"
        );
    }

    #[test]
    fn tables_align_columns() {
        let t = render_table(&[row(&["A", "LONG HEADER", "X"]), row(&["value", "b", ""])]);
        assert_eq!(t, "A       LONG HEADER   X\nvalue   b\n");
    }
}
