//! The audit as text: one row per session, those that are not complete first, the reason
//! under each such row wrapped to the terminal's width, and a count per status. Names come
//! from the store, so control characters in them are escaped before they reach a terminal.

use super::report::{Report, Status};
use crate::clock::rfc3339_ms;

const COLUMNS: usize = 5;

/// The table for a terminal `width` columns wide (at least 40 are used).
pub fn render_text(report: &Report, url: &str, width: usize) -> String {
    let width = width.max(40);
    let mut out = String::new();
    if report.sessions.is_empty() {
        out.push_str(&format!(
            "no sessions under {}; check the URL's prefix\n",
            safe(url)
        ));
    }
    let rows: Vec<[String; COLUMNS]> = report
        .sessions
        .iter()
        .map(|s| {
            [
                s.status.as_str().to_string(),
                safe(&s.session),
                safe(&s.signer_name()),
                safe(&s.repository()),
                rfc3339_ms(s.last_stored_ms())
                    .chars()
                    .take(19)
                    .collect::<String>()
                    + "Z",
            ]
        })
        .collect();
    let header = ["STATUS", "SESSION", "SIGNER", "REPOSITORY", "LAST STORED"].map(String::from);
    let widths = column_widths(&header, &rows, width);
    if !rows.is_empty() {
        out.push_str(&row(&header, &widths));
    }
    for (s, r) in report.sessions.iter().zip(&rows) {
        out.push_str(&row(r, &widths));
        if s.status != Status::Complete {
            for line in wrap(&safe(&s.why), width - 4) {
                out.push_str("    ");
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    for key in &report.stray {
        out.push_str(&format!(
            "note: {} is not an object of the layout and belongs to no session\n",
            safe(key)
        ));
    }
    for f in &report.findings {
        for (i, line) in wrap(&safe(&format!("FINDING: {f}")), width - 4)
            .iter()
            .enumerate()
        {
            out.push_str(if i == 0 { "" } else { "    " });
            out.push_str(line);
            out.push('\n');
        }
    }
    if !report.store_times {
        for line in wrap("note: LAST STORED is the shipping machines' own file time (a file:// store), not a time a server set", width) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let counts: Vec<String> = report
        .counts()
        .iter()
        .map(|(status, n)| format!("{n} {}", status.as_str()))
        .collect();
    if !counts.is_empty() {
        out.push_str(&format!(
            "{} session(s): {}\n",
            report.sessions.len(),
            counts.join(", ")
        ));
    }
    out
}

/// The width of each column, dropping columns from the right while the row would not fit
/// (width 0: not shown). A session name too long for what is left is cut with `…`.
fn column_widths(
    header: &[String; COLUMNS],
    rows: &[[String; COLUMNS]],
    width: usize,
) -> [usize; COLUMNS] {
    let mut w = [0usize; COLUMNS];
    for (i, h) in header.iter().enumerate() {
        w[i] = rows
            .iter()
            .map(|r| r[i].chars().count())
            .chain([h.chars().count()])
            .max()
            .unwrap_or(0);
    }
    let total = |w: &[usize; COLUMNS]| w.iter().filter(|&&c| c > 0).map(|c| c + 2).sum::<usize>();
    for drop in [4, 3, 2] {
        if total(&w) > width {
            w[drop] = 0;
        }
    }
    if total(&w) > width {
        w[1] = width.saturating_sub(w[0] + 4).max(8);
    }
    w
}

fn row(cells: &[String; COLUMNS], widths: &[usize; COLUMNS]) -> String {
    let mut line = String::new();
    for (cell, &w) in cells.iter().zip(widths) {
        if w == 0 {
            continue;
        }
        let mut text: String = cell.chars().take(w).collect();
        if cell.chars().count() > w {
            text.pop();
            text.push('…');
        }
        line.push_str(&format!("{text:<w$}  "));
    }
    line.truncate(line.trim_end().len());
    line.push('\n');
    line
}

/// Words into lines of at most `width` characters (a longer word, such as an object key,
/// gets a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `s` with control characters escaped, so a name from the store cannot drive a terminal.
pub fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
