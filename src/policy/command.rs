//! A Bash command line as the simple commands it runs, parsed with `brush-parser` (a bash
//! grammar, not a splitter on `&&` and `;`), so an argument rule is matched against each
//! command of a list, pipeline, subshell, `&` job or `if`/`while` body, never the line.
//!
//! Two readings, for the two questions a rule asks:
//!
//! * [`Mode::Grant`] (an agent holds Bash only under rules): *does every command it runs match
//!   a rule?* Whatever the parse cannot show is refused, naming the part: command and process
//!   substitution, arithmetic, expansions other than a plain `$NAME`, a command name that is
//!   only known when it runs, `eval`, `exec`, `source`/`.`, `alias`, `trap`, a shell given a
//!   command line (`bash -c`) or reading one (`… | sh`), functions, `for`/`case`/`select`
//!   loops, `[[ … ]]` and `(( … ))` (which evaluate arithmetic that can run commands), a
//!   here-document that expands `$…`, and a redirection that writes a file other than
//!   `/dev/null`.
//! * [`Mode::Deny`] (a settings denial binds the call): *could any command it runs match?*
//!   Substitutions, loops and functions are looked into; `bash -c '…'` and `eval` with a
//!   literal command line are read as that line; only what hides a command line from the
//!   parse (`source`, `alias`, `trap`, `eval $x`, `sh -c "$x"`) is refused.
//!
//! A line nested more than [`MAX_NESTING`] levels deep is refused before it is parsed: the
//! parser recurses, and a hostile line must not exhaust the stack.

use brush_parser::ast::{self, Command, CommandPrefixOrSuffixItem as Item, CompoundCommand};
use brush_parser::word::{self, Parameter, ParameterExpr, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

use super::command_words::{
    deny_forms, find_exec, hidden_by_git, runs_code, shell_call, unknown_name, SAFE_ENV, SHELLS,
};
pub use super::command_words::{literal, nesting};

/// How deep a command line may nest (parentheses, braces, brackets, backquotes and compound
/// keywords, counted without regard to quoting).
pub const MAX_NESTING: usize = 48;

/// Which question the commands answer (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Grant,
    Deny,
}

/// One simple command, as rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    /// Its words as written, joined by one space (redirections left out; in grant mode the
    /// leading assignments of variables Claude Code also strips, such as `NODE_ENV=…`, too).
    pub text: String,
    /// In deny mode, the other spellings a denial is matched against: without any leading
    /// assignment, with quotes removed, and without wrappers such as `timeout 5` or `sudo`.
    pub forms: Vec<String>,
}

/// The part of a command line that cannot be shown to match, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// The simple commands `line` runs, read in `mode`.
pub fn simple_commands(line: &str, mode: Mode) -> Result<Vec<Simple>, Refused> {
    let mut walk = Walk {
        mode,
        out: Vec::new(),
        depth: 0,
    };
    walk.line(line)?;
    Ok(walk.out)
}

struct Walk {
    mode: Mode,
    out: Vec<Simple>,
    /// Command lines parsed inside others (substitutions, `bash -c`).
    depth: usize,
}

fn refuse<T>(what: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(what.into()))
}

/// A fragment of the line, shortened for a sentence.
fn quoted(s: &str) -> String {
    let s = s.trim();
    let mut cut: String = s.chars().take(60).collect();
    if cut.len() < s.len() {
        cut.push('…');
    }
    format!("`{cut}`")
}

impl Walk {
    fn line(&mut self, line: &str) -> Result<(), Refused> {
        if nesting(line) > MAX_NESTING || self.depth > 4 {
            return refuse(format!(
                "the command line, which nests deeper than the hook reads ({MAX_NESTING} levels)"
            ));
        }
        let options = ParserOptions::default();
        let mut parser = brush_parser::Parser::new(line.as_bytes(), &options, &Default::default());
        let program = parser.parse_program().or_else(|e| {
            refuse(format!(
                "the command line, which does not parse as bash ({e})"
            ))
        })?;
        self.depth += 1;
        for list in &program.complete_commands {
            self.list(list)?;
        }
        self.depth -= 1;
        Ok(())
    }

    fn list(&mut self, list: &ast::CompoundList) -> Result<(), Refused> {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first)?;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, p: &ast::Pipeline) -> Result<(), Refused> {
        for (i, c) in p.seq.iter().enumerate() {
            self.command(c, i > 0)?;
        }
        Ok(())
    }

    /// `piped`: it reads the output of the command before it.
    fn command(&mut self, c: &Command, piped: bool) -> Result<(), Refused> {
        match c {
            Command::Simple(s) => self.simple(s, piped),
            Command::Compound(cc, redirects) => {
                self.compound(cc)?;
                for r in redirects.iter().flat_map(|l| l.0.iter()) {
                    self.redirect(r)?;
                }
                Ok(())
            }
            Command::Function(f) if self.mode == Mode::Deny => {
                self.compound(&f.body.0)?;
                for r in f.body.1.iter().flat_map(|l| l.0.iter()) {
                    self.redirect(r)?;
                }
                Ok(())
            }
            Command::Function(f) => refuse(format!(
                "the function definition {}, whose body runs wherever it is called",
                quoted(&format!("{}()", f.fname.value))
            )),
            Command::ExtendedTest(t) if self.mode == Mode::Deny => self.test_expr(&t.expr),
            Command::ExtendedTest(_) => {
                refuse("the test `[[ … ]]`, which evaluates arithmetic that can run commands")
            }
        }
    }

    fn test_expr(&mut self, e: &ast::ExtendedTestExpr) -> Result<(), Refused> {
        use ast::ExtendedTestExpr as T;
        match e {
            T::And(a, b) | T::Or(a, b) => {
                self.test_expr(a)?;
                self.test_expr(b)
            }
            T::Not(a) | T::Parenthesized(a) => self.test_expr(a),
            T::UnaryTest(_, w) => self.word(w, false),
            T::BinaryTest(_, a, b) => {
                self.word(a, false)?;
                self.word(b, false)
            }
        }
    }

    fn compound(&mut self, cc: &CompoundCommand) -> Result<(), Refused> {
        let grant = self.mode == Mode::Grant;
        match cc {
            CompoundCommand::BraceGroup(b) => self.list(&b.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition)?;
                self.list(&i.then)?;
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c)?;
                    }
                    self.list(&e.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0)?;
                self.list(&w.1.list)
            }
            CompoundCommand::ForClause(_) if grant => {
                refuse("the `for` loop, whose variable can change what later commands run")
            }
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w, false)?;
                }
                self.list(&f.body.list)
            }
            CompoundCommand::CaseClause(_) if grant => refuse("the `case` statement"),
            CompoundCommand::CaseClause(c) => {
                self.word(&c.value, false)?;
                for item in &c.cases {
                    if let Some(l) = &item.cmd {
                        self.list(l)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::Arithmetic(a) if !grant && !runs_code(&a.expr.value) => Ok(()),
            CompoundCommand::ArithmeticForClause(f) if !grant => self.list(&f.body.list),
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => refuse(
                "the arithmetic `(( … ))`, which can run commands through an array subscript",
            ),
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, piped: bool) -> Result<(), Refused> {
        let mut assigned: Vec<(String, bool)> = Vec::new();
        let mut words: Vec<&ast::Word> = Vec::new();
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                Item::AssignmentWord(a, w) => {
                    self.word(w, false)?;
                    let safe = matches!(&a.name, ast::AssignmentName::VariableName(n) if SAFE_ENV.contains(&n.as_str()));
                    assigned.push((w.value.clone(), safe));
                }
                other => self.item(other, &mut words)?,
            }
        }
        if let Some(name) = &s.word_or_name {
            self.word(name, true)?;
            words.push(name);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, &mut words)?;
        }
        self.record(&assigned, &words, piped)
    }

    /// One item of a command's prefix or suffix other than a leading assignment.
    fn item<'w>(&mut self, item: &'w Item, words: &mut Vec<&'w ast::Word>) -> Result<(), Refused> {
        match item {
            Item::IoRedirect(r) => self.redirect(r),
            // An assignment after the name is an argument (`declare x=1`).
            Item::Word(w) | Item::AssignmentWord(_, w) => {
                self.word(w, words.is_empty())?;
                words.push(w);
                Ok(())
            }
            Item::ProcessSubstitution(_, sub) => self.process_substitution(sub),
        }
    }

    fn process_substitution(&mut self, sub: &ast::SubshellCommand) -> Result<(), Refused> {
        match self.mode {
            Mode::Grant => refuse(format!(
                "the process substitution {}, which runs a command inside the line",
                quoted(&format!("<({})", sub.list))
            )),
            Mode::Deny => self.list(&sub.list),
        }
    }

    /// Records one simple command once its words are checked.
    fn record(
        &mut self,
        assigned: &[(String, bool)],
        words: &[&ast::Word],
        piped: bool,
    ) -> Result<(), Refused> {
        let raw: Vec<&str> = words.iter().map(|w| w.value.as_str()).collect();
        let literal: Vec<Option<String>> = words.iter().map(|w| literal(&w.value)).collect();
        let name = literal.first().cloned().flatten().unwrap_or_default();
        let base = name.rsplit('/').next().unwrap_or_default().to_string();
        self.indirection(&base, &raw, &literal, piped)?;
        let kept = assigned
            .iter()
            .filter(|(_, safe)| self.mode == Mode::Deny || !safe)
            .map(|(a, _)| a.as_str());
        let text = kept
            .chain(raw.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        if self.mode == Mode::Deny {
            // `PS4='$(rm y)'; set -x`, `x='a[$(rm y)]'; echo $((x))`: code kept to run later.
            let spelled = assigned
                .iter()
                .map(|(a, _)| super::command_words::literal(a));
            let stored = spelled.chain(literal.iter().cloned());
            if let Some(v) = stored.flatten().find(|v| v.contains('=') && runs_code(v)) {
                return refuse(format!(
                    "the assignment {}, whose value holds a command bash can run later",
                    quoted(&v)
                ));
            }
        }
        let forms = match self.mode {
            Mode::Grant => Vec::new(),
            Mode::Deny => self.wrapped(&raw, &literal, piped)?,
        };
        self.out.push(Simple { text, forms });
        if self.mode == Mode::Grant && base == "find" {
            // `find … -exec touch {} ;` runs `touch {}`: a command of the line like any other.
            let plain: Vec<&str> = literal.iter().map(|w| w.as_deref().unwrap_or("")).collect();
            for (from, to) in find_exec(&plain) {
                let name = literal[from].as_deref().unwrap_or_default();
                if literal[from].is_none() || name.contains(['*', '?', '[']) {
                    return refuse(format!(
                        "the command name {}, which is known only when it runs",
                        quoted(raw[from])
                    ));
                }
                let base = name.rsplit('/').next().unwrap_or_default();
                self.indirection(base, &raw[from..to], &literal[from..to], false)?;
                let text = raw[from..to].join(" ");
                self.out.push(Simple {
                    text,
                    forms: Vec::new(),
                });
            }
        }
        Ok(())
    }

    /// In deny mode, the spellings a denial is matched against; the command a wrapper runs
    /// (`sudo bash -c '…'`) is read as the command itself is. A command name known only when
    /// it runs (`$x y`, `r? x`), here or right after a wrapper, could be the one denied.
    fn wrapped(
        &mut self,
        raw: &[&str],
        literal: &[Option<String>],
        piped: bool,
    ) -> Result<Vec<String>, Refused> {
        let found = deny_forms(raw, literal);
        if let Some(i) = unknown_name(raw, literal, &found.wrapped) {
            return refuse(format!(
                "the command name {}, which is known only when it runs",
                quoted(raw[i])
            ));
        }
        if let Some(why) = hidden_by_git(literal, &found.wrapped) {
            return refuse(format!("{}: {why}", quoted(&raw.join(" "))));
        }
        // `env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls`: a function the next bash imports.
        if literal
            .iter()
            .flatten()
            .any(|w| w.starts_with("BASH_FUNC_"))
        {
            return refuse(format!(
                "{}: a BASH_FUNC_ variable defines a function a shell imports",
                quoted(&raw.join(" "))
            ));
        }
        for &i in &found.wrapped {
            let name = literal[i].as_deref().unwrap_or_default();
            let base = name.rsplit('/').next().unwrap_or_default();
            self.indirection(base, &raw[i..], &literal[i..], piped)?;
        }
        Ok(found.forms)
    }

    /// Commands that run a command line the parse does not see: refused, or, in deny mode
    /// with a literal line, read as that line.
    fn indirection(
        &mut self,
        base: &str,
        raw: &[&str],
        literal: &[Option<String>],
        piped: bool,
    ) -> Result<(), Refused> {
        let grant = self.mode == Mode::Grant;
        let shown = quoted(&raw.join(" "));
        let args: Option<Vec<String>> = literal.iter().skip(1).cloned().collect();
        match base {
            "eval" => match args {
                // `eval -- rm x` runs `rm x`: bash's eval takes `--`.
                Some(a) if !grant => {
                    let skip = usize::from(a.first().is_some_and(|f| f == "--"));
                    self.line(&a[skip..].join(" "))
                }
                _ => refuse(format!(
                    "{shown}: eval runs a command line the rules cannot see"
                )),
            },
            "exec" if grant => refuse(format!("{shown}: exec replaces the shell")),
            "hash" if literal.iter().any(|a| a.as_deref() == Some("-p")) => {
                refuse(format!("{shown}: hash -p makes a name run another program"))
            }
            "source" | "." | "alias" | "trap" | "enable" => refuse(format!(
                "{shown}: {base} runs commands the rules cannot see"
            )),
            b if SHELLS.contains(&b) => {
                let call = shell_call(literal);
                if call.dash_c && !grant {
                    // Any operand may be the command line (`bash -O extglob -c '…'`).
                    for line in &call.operands {
                        match line {
                            Some(line) => self.line(line)?,
                            None => refuse(format!(
                                "{shown}: {base} -c runs a command line the hook cannot read"
                            ))?,
                        }
                    }
                    Ok(())
                } else if call.dash_c || !call.script || (grant && piped) {
                    refuse(format!(
                        "{shown}: {base} runs a command line the rules cannot see"
                    ))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect) -> Result<(), Refused> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
        let writes_file = |w: &ast::Word| literal(&w.value).as_deref() != Some("/dev/null");
        match r {
            R::File(_, kind, target) => {
                let writes = matches!(kind, K::Write | K::Append | K::ReadAndWrite | K::Clobber);
                match target {
                    T::Filename(w) => {
                        self.word(w, false)?;
                        if self.mode == Mode::Grant && writes && writes_file(w) {
                            return refuse(format!(
                                "the redirection {}, which writes a file no rule names",
                                quoted(&format!("{r}"))
                            ));
                        }
                        Ok(())
                    }
                    T::Fd(_) => Ok(()),
                    T::Duplicate(w) => {
                        self.word(w, false)?;
                        let fd = literal(&w.value)
                            .is_some_and(|v| v == "-" || v.bytes().all(|b| b.is_ascii_digit()));
                        if self.mode == Mode::Grant && !fd && writes_file(w) {
                            return refuse(format!(
                                "the redirection {}, which writes a file no rule names",
                                quoted(&format!("{r}"))
                            ));
                        }
                        Ok(())
                    }
                    T::ProcessSubstitution(_, sub) => self.process_substitution(sub),
                }
            }
            R::OutputAndError(w, _) => {
                self.word(w, false)?;
                if self.mode == Mode::Grant && writes_file(w) {
                    return refuse(format!(
                        "the redirection {}, which writes a file no rule names",
                        quoted(&format!("{r}"))
                    ));
                }
                Ok(())
            }
            R::HereString(_, w) => self.word(w, false),
            R::HereDocument(_, doc) => {
                let text = &doc.doc.value;
                let expands = doc.requires_expansion
                    && (runs_code(text)
                        || (self.mode == Mode::Grant
                            && (text.contains("${") || text.contains("$("))));
                if expands {
                    return refuse(
                        "the here-document, which runs `$(…)` or `$[…]` or expands `${…}` as it is read",
                    );
                }
                Ok(())
            }
        }
    }

    /// Checks one word's expansions; `name`: it is the command's name.
    fn word(&mut self, w: &ast::Word, name: bool) -> Result<(), Refused> {
        let pieces = word::parse(&w.value, &ParserOptions::default()).or_else(|_| {
            refuse(format!(
                "the word {}, which does not parse",
                quoted(&w.value)
            ))
        })?;
        self.pieces(&w.value, &pieces, name)
    }

    fn pieces(
        &mut self,
        src: &str,
        pieces: &[WordPieceWithSource],
        name: bool,
    ) -> Result<(), Refused> {
        let grant = self.mode == Mode::Grant;
        for p in pieces {
            let text = src.get(p.start_index..p.end_index).unwrap_or(src);
            match &p.piece {
                WordPiece::CommandSubstitution(inner)
                | WordPiece::BackquotedCommandSubstitution(inner) => {
                    if grant {
                        return refuse(format!(
                            "the command substitution {}, which runs a command inside the line",
                            quoted(text)
                        ));
                    }
                    self.line(inner)?;
                }
                WordPiece::ArithmeticExpression(e) if grant || runs_code(&e.value) => {
                    return refuse(format!(
                        "the arithmetic {}, which can run commands through an array subscript",
                        quoted(text)
                    ));
                }
                WordPiece::ParameterExpansion(e) => expansion(e, grant, name, src, text)?,
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(src, inner, name)?;
                }
                // `$[…]`, bash's older arithmetic, which the grammar reads as text.
                WordPiece::Text(t)
                    if grant
                        && t.ends_with('$')
                        && src.get(p.end_index..).is_some_and(|r| r.starts_with('[')) =>
                {
                    return refuse(format!(
                        "the arithmetic {}, which can run commands through an array subscript",
                        quoted(src.get(p.start_index..).unwrap_or(src))
                    ));
                }
                // `~$(touch /tmp/x)`: bash expands what follows the tilde when no user has
                // that name; the grammar cuts the prefix at the `/`, so read the whole rest.
                WordPiece::TildePrefix(t) if t.contains(['$', '`', '<', '>']) => {
                    return self.after_tilde(src, p);
                }
                WordPiece::Text(t) if grant && name && t.contains(['*', '?', '[']) => {
                    return refuse(format!(
                        "the command name {}, a pattern of file names",
                        quoted(src)
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `~$(touch /tmp/x)`: the rest of the word `src` after the tilde piece `p`, read whole.
    fn after_tilde(&mut self, src: &str, p: &WordPieceWithSource) -> Result<(), Refused> {
        let rest = src.get(p.start_index + 1..).unwrap_or_default();
        let inner = word::parse(rest, &ParserOptions::default())
            .or_else(|_| refuse(format!("the word {}, which does not parse", quoted(src))))?;
        self.pieces(rest, &inner, false)
    }
}

/// Whether the parameter expansion `e` (its text `text`, in the word `src`, the command name
/// when `name`) may stand: in a grant only a plain `$name`, `$1` or `$?` that is not the
/// command name; in a denial anything that runs no code.
fn expansion(
    e: &ParameterExpr,
    grant: bool,
    name: bool,
    src: &str,
    text: &str,
) -> Result<(), Refused> {
    let plain = matches!(
        e,
        ParameterExpr::Parameter {
            parameter: Parameter::Positional(_) | Parameter::Special(_) | Parameter::Named(_),
            indirect: false
        }
    );
    if grant && name {
        return refuse(format!(
            "the command name {}, which is known only when it runs",
            quoted(src)
        ));
    }
    if (grant && !plain) || runs_code(text) {
        return refuse(format!(
            "the expansion {}, which can run or hide a command",
            quoted(text)
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
