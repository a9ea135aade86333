//! Subagent frontmatter: the YAML block between the `---` lines at the top of an agent file.
//!
//! Parsed with a real YAML parser, so quoting, comments, flow lists (`[Read, Grep]`) and block
//! lists behave as YAML says. Only `name`, `tools`, `disallowedTools`, `memory` (which adds
//! the file tools, as Claude Code does) and `description` are read; any other field is ignored
//! and never treated as a grant. Where Claude Code 2.1.332 reads a block otherwise than YAML
//! does (where it ends, what it parses again, which names it refuses), the rule is in
//! [`super::compat`].

use super::compat;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

pub use compat::frontmatter_block;

/// One agent file as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    pub name: String,
    /// `None`: `tools` omitted, the agent inherits the session pool.
    pub tools: Option<Vec<String>>,
    pub disallowed: Vec<String>,
}

/// Why an agent file could not be read. `name` is set when the file still says which agent
/// it meant to declare, so that agent can be held to nothing instead of disappearing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    pub name: Option<String>,
    pub message: String,
}

impl FrontmatterError {
    /// Agent `name` holds nothing, for the reason `message`.
    pub fn named(name: &str, message: &str) -> FrontmatterError {
        FrontmatterError {
            name: Some(name.to_string()),
            message: message.to_string(),
        }
    }
}

/// Parses an agent file's frontmatter.
pub fn parse_agent(text: &str) -> Result<AgentFile, FrontmatterError> {
    let block = frontmatter_block(text).map_err(|e| FrontmatterError {
        name: None,
        message: e.to_string(),
    })?;
    let fail = |message: String| FrontmatterError {
        name: guess_name(block),
        message,
    };
    let load = |text: &str| -> Result<Vec<Yaml>, YamlFault> {
        refuse_aliases(text)?;
        YamlLoader::load_from_str(text).map_err(|e| YamlFault::NotYaml(e.to_string()))
    };
    let docs = match load(block) {
        Ok(docs) => docs,
        // Claude Code retries a block that does not parse the way it does, and so does this.
        Err(first) => load(&compat::recovered(block)).map_err(|_| fail(first.to_string()))?,
    };
    let doc = match docs.into_iter().next() {
        Some(Yaml::Hash(h)) => h,
        Some(_) | None => return Err(fail("the frontmatter is not a YAML mapping".into())),
    };
    let get = |key: &str| doc.get(&Yaml::String(key.into()));
    let name = match get("name") {
        Some(Yaml::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Yaml::String(_)) | None => return Err(fail("the frontmatter has no `name`".into())),
        Some(_) => return Err(fail("`name` is not a string".into())),
    };
    let named = |message: String| FrontmatterError {
        name: Some(name.clone()),
        message,
    };
    if compat::refuses_agent_name(&name) {
        return Err(named(compat::REFUSED_NAME.into()));
    }
    let mut tools = match get("tools") {
        None => None,
        Some(v) => Some(tool_list(v).map_err(|e| named(format!("`tools` {e}")))?),
    };
    if let (Some(list), Some(Yaml::String(m))) = (&mut tools, get("memory")) {
        compat::add_memory_tools(list, m);
    }
    let disallowed = match get("disallowedTools") {
        None => vec![],
        Some(v) => tool_list(v).map_err(|e| named(format!("`disallowedTools` {e}")))?,
    };
    Ok(AgentFile {
        name,
        tools,
        disallowed,
    })
}

/// Refuses YAML aliases before anything is built: the loader copies an anchored value at
/// every `*alias`, so a few lines of nested aliases expand to billions of values (an "alias
/// bomb") and would stall every hook call. Agent declarations never need an alias.
///
/// An alias is written `*name` and the scanner reads one only at a `*`, so text without a
/// `*` holds none and skips this second parse (most agent files: half their parsing time).
pub(super) fn refuse_aliases(block: &str) -> Result<(), YamlFault> {
    if !block.contains('*') {
        return Ok(());
    }
    alias_pass(block)
}

/// The parse [`refuse_aliases`] runs: every event, stopping at the first alias or error.
fn alias_pass(block: &str) -> Result<(), YamlFault> {
    let mut parser = Parser::new_from_str(block);
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => return Ok(()),
            Ok((Event::Alias(_), _)) => return Err(YamlFault::Alias),
            Ok(_) => {}
            Err(e) => return Err(YamlFault::NotYaml(e.to_string())),
        }
    }
}

/// Why a frontmatter block is not read as YAML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum YamlFault {
    #[error("the frontmatter uses a YAML alias (`*name`), which agent declarations never need")]
    Alias,
    /// The parser's own message.
    #[error("the frontmatter is not valid YAML: {0}")]
    NotYaml(String),
}

/// Why a `tools`-style value is not a list of tools; read after the field's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum ListFault {
    #[error("has an item that is not a string ({0})")]
    ItemNotAString(&'static str),
    #[error("is {0}, not a string or a list")]
    NotAList(&'static str),
}

/// A `tools`-style value: a comma or space separated string, or a YAML list of strings.
/// `tools:` with no value is an empty list: an agent that holds nothing, the narrower reading.
fn tool_list(v: &Yaml) -> Result<Vec<String>, ListFault> {
    match v {
        Yaml::Null => Ok(vec![]),
        Yaml::String(s) => Ok(split_rules(s)),
        Yaml::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Yaml::String(s) => out.extend(split_rules(s)),
                    other => return Err(ListFault::ItemNotAString(kind(other))),
                }
            }
            Ok(out)
        }
        other => Err(ListFault::NotAList(kind(other))),
    }
}

/// Splits `Read, Grep Bash(npm run lint)` into rules: commas and white space separate rules,
/// except inside parentheses, where they belong to the rule's argument.
pub fn split_rules(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for ch in s.chars() {
        match ch {
            '(' => {
                depth += 1;
                cur.push(ch);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(ch);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn kind(v: &Yaml) -> &'static str {
    match v {
        Yaml::Real(_) | Yaml::Integer(_) => "a number",
        Yaml::String(_) => "a string",
        Yaml::Boolean(_) => "a boolean",
        Yaml::Array(_) => "a list",
        Yaml::Hash(_) => "a mapping",
        Yaml::Alias(_) => "an alias",
        Yaml::Null => "null",
        Yaml::BadValue => "an unreadable value",
    }
}

/// The agent a broken block meant to declare, read from a plain `name: x` line.
fn guess_name(block: &str) -> Option<String> {
    block.lines().find_map(|l| {
        let v = l
            .strip_prefix("name:")?
            .split(" #")
            .next()?
            .trim()
            .trim_matches(['"', '\'']);
        (!v.is_empty()).then(|| v.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> AgentFile {
        parse_agent(text).unwrap()
    }

    /// Claude Code 2.1.332 ends the block at the first `---`, even inside a line or a
    /// comment, and reads nothing after it; reading further would grant what it never offers.
    #[test]
    fn the_block_ends_where_claude_code_ends_it() {
        let a = ok("---\nname: r\ntools:\n  - Read\n  - Grep # ---\n  - Write\n---\n");
        assert_eq!(a.tools.unwrap(), ["Read", "Grep"]);
        let a = ok("---  \r\n\nname: r\ntools: Read\r\n---\r\nbody --- more\n");
        assert_eq!(a.tools.unwrap(), ["Read"]);
        assert!(frontmatter_block("--- x\nname: r\n---\n").is_err());
        assert!(frontmatter_block("---\nname: r\n").is_err());
        assert_eq!(
            frontmatter_block("\u{feff}---\nname: r\n---").unwrap(),
            "name: r\n"
        );
    }

    #[test]
    fn names_claude_code_does_not_load_declare_nothing() {
        for name in [
            "-x",
            "plug:deployer",
            "plug\u{ff1a}deployer",
            &"a".repeat(257),
        ] {
            let e = parse_agent(&format!("---\nname: \"{name}\"\ntools: Bash\n---\n")).unwrap_err();
            assert_eq!(e.name.as_deref(), Some(name));
        }
        assert!(parse_agent(&format!(
            "---\nname: {}\ntools: Bash\n---\n",
            "a".repeat(256)
        ))
        .is_ok());
    }

    #[test]
    fn a_memory_scope_adds_the_file_tools_to_an_explicit_list() {
        let a = ok("---\nname: r\ntools: Grep\nmemory: project\n---\n");
        assert_eq!(a.tools.unwrap(), ["Grep", "Write", "Edit", "Read"]);
        let a = ok("---\nname: r\ntools: Grep\nmemory: somewhere\n---\n");
        assert_eq!(a.tools.unwrap(), ["Grep"]);
        assert_eq!(ok("---\nname: r\nmemory: user\n---\n").tools, None);
    }

    /// Regression: a description with `: ` in it (common in generated agents) or a list
    /// indented with tabs made the agent unusable, while Claude Code reads both.
    #[test]
    fn a_block_claude_code_recovers_is_recovered() {
        let a = ok("---\nname: r\ndescription: Use this agent when: reviewing code\ntools: Read, Grep\n---\n");
        assert_eq!(a.tools.unwrap(), ["Read", "Grep"]);
        let a = ok("---\nname: r\ntools:\n\t- Read\n\t- Grep\n---\n");
        assert_eq!(a.tools.unwrap(), ["Read", "Grep"]);
        let a = ok("---\nname: r\ndescription: say \"hi\": @once \\ done\ntools: [Read]\n---\n");
        assert_eq!(a.tools.unwrap(), ["Read"]);
        // An alias bomb in a flow list on a line that is retried is never expanded.
        let mut items = vec!["&a0 [x, x, x, x, x, x, x, x, x]".to_string()];
        for i in 1..10 {
            items.push(format!(
                "&a{i} [{}]",
                vec![format!("*a{}", i - 1); 9].join(", ")
            ));
        }
        let text = format!(
            "---\nname: r\ndescription: a: b\ntools: [{}]\n---\n",
            items.join(", ")
        );
        // Quoted as a string, as a value with `*` and `&` is: nothing was expanded.
        assert!(ok(&text).tools.unwrap()[0].starts_with("[&a0"));
        // As Claude Code reads it: a quoted string naming no tool.
        let a = ok("---\nname: r\ntools: [Read\n---\n");
        assert_eq!(a.tools.unwrap(), ["[Read"]);
    }

    #[test]
    fn string_flow_and_block_lists() {
        assert_eq!(
            ok("---\nname: r\ntools: Read, Grep Glob\n---\n")
                .tools
                .unwrap(),
            ["Read", "Grep", "Glob"]
        );
        assert_eq!(
            ok("---\nname: r\ntools: [Read, \"Grep\"]\n---\n")
                .tools
                .unwrap(),
            ["Read", "Grep"]
        );
        assert_eq!(
            ok("---\nname: r\ntools:\n  - Read\n  - 'Bash(npm run lint)'\n---\n")
                .tools
                .unwrap(),
            ["Read", "Bash(npm run lint)"]
        );
    }

    #[test]
    fn quotes_comments_bom_crlf() {
        let a = ok("\u{feff}---\r\nname: \"rev\" # the reviewer\r\ntools: Read # only reads\r\ndisallowedTools: 'Write'\r\n---\r\nbody\r\n");
        assert_eq!(a.name, "rev");
        assert_eq!(a.tools.unwrap(), ["Read"]);
        assert_eq!(a.disallowed, ["Write"]);
    }

    #[test]
    fn omitted_tools_inherit_and_empty_tools_hold_nothing() {
        assert_eq!(
            ok("---\nname: w\ndisallowedTools: WebFetch\n---\n").tools,
            None
        );
        assert_eq!(ok("---\nname: w\ntools:\n---\n").tools, Some(vec![]));
    }

    #[test]
    fn bad_declarations_name_their_agent() {
        let e = parse_agent("---\nname: bad\ntools: {Read: yes}\n---\n").unwrap_err();
        assert_eq!(e.name.as_deref(), Some("bad"));
        let e = parse_agent("---\nname: broken\n  tools: Read\n---\n").unwrap_err();
        assert_eq!(e.name.as_deref(), Some("broken"));
        assert!(parse_agent("no frontmatter").unwrap_err().name.is_none());
        assert!(parse_agent("---\nname: x\n").is_err());
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_expands() {
        let mut text = String::from(
            "---\nname: bomb\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
        );
        for i in 1..9 {
            let prev = format!("*a{}", i - 1);
            text.push_str(&format!(
                "a{i}: &a{i} [{}]\n",
                [prev.as_str(); 9].join(", ")
            ));
        }
        text.push_str("tools: Read\n---\n");
        let e = parse_agent(&text).unwrap_err();
        assert_eq!(e.name.as_deref(), Some("bomb"));
        assert!(e.message.contains("alias"), "{}", e.message);
    }

    /// Skipping the alias pass for text without `*` changes no outcome: where that pass
    /// would have failed, the loader fails with the same message.
    #[test]
    fn text_without_a_star_reads_as_it_did_with_the_alias_pass() {
        let mut failed = 0;
        for text in [
            "name: r\n  tools: Read\n",
            "name: [r\n",
            "name: r\ntools: {Read: yes\n",
            "name: 'r\n",
            "name: r\n\ttools: Read\n",
            "a: b: c\n",
            "name: r\ntools: Read\n",
            "- a\nb: c\n",
            "? x\n: y\n:\n",
            "name: \"\\q\"\n",
        ] {
            failed += usize::from(alias_pass(text).is_err());
            let loaded = YamlLoader::load_from_str(text)
                .map(|_| ())
                .map_err(|e| format!("the frontmatter is not valid YAML: {e}"));
            match alias_pass(text) {
                Ok(()) => assert_eq!(refuse_aliases(text), Ok(()), "{text:?}"),
                Err(e) => assert_eq!(loaded, Err(e.to_string()), "{text:?}"),
            }
        }
        assert!(failed >= 5, "only {failed} of the samples are invalid YAML");
    }

    #[test]
    fn split_rules_keeps_arguments_together() {
        assert_eq!(
            split_rules("Bash(npm run lint), Read Agent(a, b)"),
            ["Bash(npm run lint)", "Read", "Agent(a, b)"]
        );
    }
}
