//! Live: the built-in agent preset (src/derive/builtin.rs, pinned in contract.json) is what the
//! installed Claude Code 2.1.332 defines. Its binary bundles its JavaScript, where each built-in
//! is an object `{agentType:"Explore", …, tools:[…] | get tools(){…}, disallowedTools:[…], …}`
//! whose list members are string literals, minified constants (`wt="Agent"`) or spreads of
//! constant arrays (`...Jj` with `Jj=[Vt,fh,Wu,iM]`). A constant is read at its nearest
//! definition before the place that uses it (a bundle defines a module's constants before
//! its code). `claude` is `ATTENU_CLAUDE_BIN`, else on `PATH`; skipped loudly without it.

mod common;

use attenu_hook::derive::builtin::BUILTINS;
use common::{harness, skip};
use memchr::memmem;
use std::path::PathBuf;

fn main() {
    harness::run(tests![the_preset_is_what_the_installed_claude_code_defines]);
}

/// `claude`: `ATTENU_CLAUDE_BIN`, else on `PATH`; or the test is skipped.
fn find_claude() -> PathBuf {
    if let Some(p) = std::env::var_os("ATTENU_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("claude"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            skip("needs the real Claude Code 2.1.332 (set ATTENU_CLAUDE_BIN; .ci/run does)")
        })
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// The nearest `NAME=<value>` before `before` whose value `accept`s, at a definition's start
/// (after `,`, `;`, ` ` or `(`): searched backwards, so it stops at the first that does.
fn nearest_def<'a>(
    bin: &'a [u8],
    name: &str,
    before: usize,
    accept: impl Fn(&'a [u8]) -> Option<(usize, &'a [u8])>,
) -> Option<(usize, &'a [u8])> {
    let needle = format!("{name}=");
    memmem::rfind_iter(&bin[..before], needle.as_bytes())
        .filter(|&pos| pos > 0 && b",; (".contains(&bin[pos - 1]))
        .find_map(|pos| accept(&bin[pos + needle.len()..]).map(|(_, v)| (pos, v)))
}

/// A string literal of a tool's name at the start of `rest`.
fn tool_literal(rest: &[u8]) -> Option<(usize, &[u8])> {
    let body = rest.strip_prefix(b"\"")?;
    let end = body.iter().position(|&c| c == b'"')?;
    let name = &body[..end];
    (name.first()?.is_ascii_uppercase() && name.iter().all(u8::is_ascii_alphanumeric))
        .then_some((end + 2, name))
}

/// An array literal `[…]` (no nesting) at the start of `rest`: its inside.
fn array_literal(rest: &[u8]) -> Option<(usize, &[u8])> {
    let body = rest.strip_prefix(b"[")?;
    let end = body.iter().position(|&c| c == b']')?;
    Some((end + 2, &body[..end]))
}

/// The members of a list's inside, each resolved to tool names.
fn resolve_list(bin: &[u8], inside: &[u8], at: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for member in inside.split(|&c| c == b',') {
        let m = member.trim_ascii();
        if let Some(name) = m.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")) {
            out.push(String::from_utf8_lossy(name).into_owned());
        } else if let Some(spread) = m.strip_prefix(b"...") {
            let name = String::from_utf8_lossy(spread).into_owned();
            let (pos, inner) = nearest_def(bin, &name, at, array_literal)
                .ok_or_else(|| format!("no array {name} before offset {at}"))?;
            out.extend(resolve_list(bin, inner, pos)?);
        } else if !m.is_empty() && m.iter().all(|&c| is_ident(c)) {
            let name = String::from_utf8_lossy(m).into_owned();
            let (_, value) = nearest_def(bin, &name, at, tool_literal)
                .ok_or_else(|| format!("no tool name {name} before offset {at}"))?;
            out.push(String::from_utf8_lossy(value).into_owned());
        } else {
            return Err(format!(
                "cannot read member {:?}",
                String::from_utf8_lossy(m)
            ));
        }
    }
    Ok(out)
}

/// Where the object of built-in `name` starts: `agentType:"name"`, or `agentType:V` with the
/// constant `V="name"`.
fn definition(bin: &[u8], agent_types: &[usize], name: &str) -> Option<usize> {
    let literal = format!("agentType:\"{name}\",");
    if let Some(&at) = agent_types
        .iter()
        .find(|&&at| bin[at..].starts_with(literal.as_bytes()))
    {
        return Some(at);
    }
    let value = format!("=\"{name}\"");
    memmem::find_iter(bin, value.as_bytes()).find_map(|v| {
        let start = bin[..v].iter().rposition(|&c| !is_ident(c))? + 1;
        let by_ref = format!("agentType:{},", String::from_utf8_lossy(&bin[start..v]));
        // The constant's own object: the first use after its definition.
        agent_types
            .iter()
            .copied()
            .find(|&at| at > v && bin[at..].starts_with(by_ref.as_bytes()))
    })
}

/// `(tools, disallowedTools)` of the object at `at`: `None` tools for `["*"]`; for a `get
/// tools()` with two branches, the last (the public build's).
fn lists(bin: &[u8], at: usize) -> Result<(Option<Vec<String>>, Vec<String>), String> {
    let end = memmem::find(&bin[at..(at + 4000).min(bin.len())], b"getSystemPrompt")
        .ok_or("no getSystemPrompt after the agentType")?;
    let obj = &bin[at..at + end];
    let after = |key: &[u8]| -> Option<(usize, &[u8])> {
        memmem::find_iter(obj, key)
            .find(|&p| p == 0 || !is_ident(obj[p - 1]))
            .and_then(|p| array_literal(&obj[p + key.len()..]).map(|(_, a)| (p, a)))
    };
    let tools = match after(b"tools:") {
        Some((_, inside)) => Some(inside.to_vec()),
        None => memmem::find(obj, b"get tools(){return ").map(|p| {
            let body = &obj[p..];
            let close = body.iter().position(|&c| c == b'}').unwrap_or(body.len());
            let open = body[..close].iter().rposition(|&c| c == b'[').unwrap_or(0);
            let shut = body[..close]
                .iter()
                .rposition(|&c| c == b']')
                .unwrap_or(open);
            body[open + 1..shut].to_vec()
        }),
    };
    let tools = match tools {
        Some(inside) => Some(resolve_list(bin, &inside, at)?).filter(|t| t != &["*"]),
        None => None,
    };
    let disallowed = match after(b"disallowedTools:") {
        Some((_, inside)) => resolve_list(bin, inside, at)?,
        None => Vec::new(),
    };
    Ok((tools, disallowed))
}

fn the_preset_is_what_the_installed_claude_code_defines() {
    let claude = find_claude();
    let path = std::fs::canonicalize(&claude).unwrap();
    let bin = std::fs::read(&path).unwrap();
    // A definition: `agentType:X,` then its `whenToUse`, and `source:"built-in"` before its
    // `getSystemPrompt` (a user's or a plugin's agent is made elsewhere, from its file).
    let builtin: Vec<usize> = memmem::find_iter(&bin, b"agentType:")
        .filter(|&at| {
            let obj = &bin[at..(at + 4000).min(bin.len())];
            let Some(comma) = obj.iter().position(|&c| c == b',') else {
                return false;
            };
            let next = &obj[comma + 1..];
            (next.starts_with(b"whenToUse:") || next.starts_with(b"get whenToUse("))
                && memmem::find(obj, b"source:\"built-in\"")
                    .is_some_and(|s| memmem::find(obj, b"getSystemPrompt").is_some_and(|g| s < g))
        })
        .collect();
    let agent_types = &builtin;
    assert!(
        !builtin.is_empty(),
        "{} has no built-in agent definitions to read (is it the bundled 2.1.332 binary?)",
        path.display()
    );
    let found: Vec<Option<usize>> = BUILTINS
        .iter()
        .map(|b| definition(&bin, agent_types, b.name))
        .collect();
    for (b, at) in BUILTINS.iter().zip(&found) {
        let at = at.unwrap_or_else(|| panic!("{} defines no built-in {}", path.display(), b.name));
        let (tools, disallowed) = lists(&bin, at).unwrap_or_else(|e| panic!("{}: {e}", b.name));
        let ours = b.tools.map(|t| t.iter().map(|s| s.to_string()).collect());
        assert_eq!(tools, ours, "{} tools", b.name);
        let ours: Vec<String> = b.disallowed.iter().map(|s| s.to_string()).collect();
        assert_eq!(disallowed, ours, "{} disallowedTools", b.name);
    }
    // Every built-in the binary defines is in the preset, or the table is out of date.
    for &at in &builtin {
        let head = String::from_utf8_lossy(&bin[at..(at + 60).min(bin.len())]).into_owned();
        assert!(
            found.contains(&Some(at)),
            "a built-in agent the preset lacks: {head}"
        );
    }
}
