//! The one terminal policy for human-readable output (`log`, `derive --human`, `audit`):
//! colour only on a terminal, with `NO_COLOR` unset or empty (<https://no-color.org>) and
//! `TERM` not `dumb`; the width from `COLUMNS` when it is a positive number. Each command keeps
//! its own fallback width (the table of `log` asks the terminal; the others use 100).

use std::ffi::OsStr;
use std::io::IsTerminal;

/// What stdout is and what the environment asks of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    /// Stdout is a terminal.
    pub tty: bool,
    /// Colour is wanted.
    pub colour: bool,
    /// `COLUMNS`, when it is a positive number.
    pub columns: Option<usize>,
}

impl Terminal {
    /// Stdout and the environment of this process.
    pub fn stdout() -> Terminal {
        Terminal::from(
            std::io::stdout().is_terminal(),
            std::env::var("COLUMNS").ok().as_deref(),
            std::env::var_os("NO_COLOR").as_deref(),
            std::env::var("TERM").ok().as_deref(),
        )
    }

    /// The policy, as a pure function of what [`Terminal::stdout`] reads.
    pub fn from(
        tty: bool,
        columns: Option<&str>,
        no_color: Option<&OsStr>,
        term: Option<&str>,
    ) -> Terminal {
        Terminal {
            tty,
            colour: tty && no_color.is_none_or(|v| v.is_empty()) && term != Some("dumb"),
            columns: columns
                .and_then(|c| c.trim().parse().ok())
                .filter(|&c: &usize| c > 0),
        }
    }

    /// `COLUMNS`, else `fallback`.
    pub fn width_or(&self, fallback: usize) -> usize {
        self.columns.unwrap_or(fallback)
    }

    /// `COLUMNS`, else the terminal's own width (`stty size`), else 80 on a terminal; `None`
    /// when stdout is not a terminal and `COLUMNS` is unset (one line per row).
    pub fn table_width(&self) -> Option<usize> {
        if self.columns.is_some() {
            return self.columns;
        }
        if !self.tty {
            return None;
        }
        Some(stty_columns().unwrap_or(80))
    }
}

/// The controlling terminal's width, as `stty size` reports it.
fn stty_columns() -> Option<usize> {
    let tty = std::fs::File::open("/dev/tty").ok()?;
    let out = std::process::Command::new("stty")
        .arg("size")
        .stdin(tty)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_that_asks_for_it() {
        let of = |tty, nc: Option<&str>, term| Terminal::from(tty, None, nc.map(OsStr::new), term);
        assert!(of(true, None, Some("xterm")).colour);
        assert!(!of(false, None, Some("xterm")).colour, "not a terminal");
        assert!(!of(true, Some("1"), None).colour, "NO_COLOR");
        assert!(
            of(true, Some(""), None).colour,
            "an empty NO_COLOR is unset"
        );
        assert!(!of(true, None, Some("dumb")).colour, "TERM=dumb");
    }

    #[test]
    fn columns_only_when_a_positive_number() {
        let cols = |c| Terminal::from(false, Some(c), None, None).columns;
        assert_eq!(cols("120"), Some(120));
        assert_eq!(cols(" 90 "), Some(90));
        for odd in ["", "x", "0", "-5"] {
            assert_eq!(cols(odd), None, "{odd}");
        }
        let off_tty = Terminal::from(false, None, None, None);
        assert_eq!(off_tty.table_width(), None);
        assert_eq!(off_tty.width_or(100), 100);
    }
}
