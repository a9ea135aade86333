#!/usr/bin/env python3
"""Writes a large, realistic set of Claude Code agent files, deterministically (seeded).

    python3 bench/roster_gen.py DIR [--agents 200] [--seed 27]

writes DIR/.claude/agents/<slug>.md. The files are shaped like those of public agent
collections (none of their text is used): names in kebab-case, in CamelCase and in words with
spaces ("Python Security Expert"), descriptions of one to three sentences with examples, a
`model:` line in most, and bodies of 30-120 lines. About 93% have no `tools:` line and so
inherit the session pool; the rest list tools, some with MCP tools, and some carry
`disallowedTools`. With `--collections`, three such collections side by side in nested folders,
with names some of them share (`generate_collections`). Standard library only; nothing here
runs under `cargo test`.
"""

import argparse
import random
from pathlib import Path

LANGS = ["Python", "Rust", "Go", "TypeScript", "Java", "Kotlin", "Swift", "Ruby", "Elixir",
         "C++", "Scala", "PHP", "Haskell", "Lua", "Dart", "Terraform", "SQL", "Bash"]
AREAS = ["Security", "Performance", "API", "Database", "Frontend", "Backend", "Cloud",
         "DevOps", "Testing", "Accessibility", "Data", "ML", "Mobile", "Payments", "Search",
         "Observability", "Compliance", "Migration", "Release", "Documentation", "GraphQL",
         "Kubernetes", "Networking", "Caching", "Auth", "Billing", "Incident", "Localization"]
ROLES = ["Expert", "Reviewer", "Architect", "Engineer", "Specialist", "Auditor", "Planner",
         "Debugger", "Optimizer", "Writer", "Analyst", "Tester", "Consultant", "Mentor",
         "Coordinator", "Designer", "Strategist", "Refactorer"]
VERBS = ["Reviews", "Designs", "Audits", "Optimizes", "Debugs", "Plans", "Documents",
         "Tests", "Refactors", "Migrates", "Profiles", "Hardens", "Explains", "Triages"]
OBJECTS = ["pull requests", "service boundaries", "database schemas", "build pipelines",
           "public APIs", "test suites", "deployment manifests", "query plans",
           "error handling", "dependency upgrades", "caching layers", "access controls",
           "release notes", "incident timelines", "UI components", "data models"]
TOOL_SETS = [
    ["Read", "Grep", "Glob"],
    ["Read", "Grep", "Glob", "Bash"],
    ["Read", "Write", "Edit", "Bash"],
    ["Read", "WebFetch", "WebSearch"],
    ["Read", "Edit", "MultiEdit", "Grep", "Glob", "Bash", "TodoWrite"],
    ["Read", "Grep", "Glob", "LSP"],
]
MCP_TOOLS = ["mcp__github__create_issue", "mcp__github__get_pull_request", "mcp__linear",
             "mcp__sentry__search_issues", "mcp__postgres__query", "mcp__context7"]
DISALLOWED = [["Write", "Edit"], ["Bash"], ["WebFetch", "WebSearch"], ["NotebookEdit"],
              ["Bash", "Write"]]
MODELS = ["sonnet", "opus", "haiku", "inherit"]


def agent_name(rng: random.Random, i: int, used: set) -> str:
    """A name in one of the three spellings collections use, unique however it is spelled."""
    while True:
        words = [rng.choice(LANGS), rng.choice(AREAS), rng.choice(ROLES)]
        if rng.random() < 0.4:
            words = words[1:]
        style = i % 5
        if style in (0, 1, 2):
            name = "-".join(w.lower().replace("+", "p") for w in words)
        elif style == 3:
            name = "".join(w.replace("+", "p") for w in words)
        else:
            name = " ".join(words)
        # Unique by file name too: "API Debugger" and "api-debugger" would share one.
        key = slug(name).replace("-", "")
        if key not in used:
            used.add(key)
            return name


def slug(name: str) -> str:
    return "".join(c.lower() if c.isalnum() else "-" for c in name).strip("-")


def description(rng: random.Random, name: str) -> str:
    verb, obj = rng.choice(VERBS), rng.choice(OBJECTS)
    s = f"{verb} {obj} with a focus on correctness and maintainability."
    if rng.random() < 0.7:
        s += (f" Use PROACTIVELY when {rng.choice(OBJECTS)} change or before a release."
              f" Examples: <example>Context: the user asks for help with {rng.choice(OBJECTS)}."
              f" user: \"Can you look at this?\" assistant: \"I'll use the {name} agent.\""
              f"</example>")
    return s.replace('"', '\\"')


def body(rng: random.Random, name: str) -> str:
    lines = [f"You are {name}, a senior practitioner.", "", "## Focus areas"]
    for _ in range(rng.randint(6, 14)):
        lines.append(f"- {rng.choice(VERBS)} {rng.choice(OBJECTS)} and records the trade-offs")
    lines += ["", "## Approach"]
    for k in range(rng.randint(5, 12)):
        lines.append(f"{k + 1}. Start from the {rng.choice(OBJECTS)}; measure before changing "
                     f"anything, and keep every step reversible.")
    lines += ["", "## Output"]
    for _ in range(rng.randint(10, 80)):
        lines.append(f"- A short report on {rng.choice(OBJECTS)}, with file paths and line "
                     f"numbers, ordered by risk.")
    return "\n".join(lines) + "\n"


def frontmatter(rng: random.Random, name: str, with_tools: bool) -> str:
    out = ["---", f"name: {name}", f"description: \"{description(rng, name)}\""]
    if with_tools:
        tools = list(rng.choice(TOOL_SETS))
        if rng.random() < 0.5:
            tools += rng.sample(MCP_TOOLS, rng.randint(1, 2))
        out.append("tools: " + ", ".join(tools))
    if rng.random() < 0.15:
        out.append("disallowedTools: " + ", ".join(rng.choice(DISALLOWED)))
    if rng.random() < 0.8:
        out.append(f"model: {rng.choice(MODELS)}")
    if rng.random() < 0.2:
        out.append(f"color: {rng.choice(['red', 'blue', 'green', 'purple', 'orange'])}")
    out.append("---")
    return "\n".join(out) + "\n"


def generate(root: Path, agents: int = 200, seed: int = 27) -> list:
    """Writes the agent files under `root`/.claude/agents and returns their names, sorted."""
    rng = random.Random(seed)
    d = root / ".claude" / "agents"
    d.mkdir(parents=True, exist_ok=True)
    used: set = set()
    names = []
    # One in fifteen lists its tools (13 of 200 in the collection this is shaped after).
    for i in range(agents):
        name = agent_name(rng, i, used)
        with_tools = i % 15 == 7
        sub = d / rng.choice(["", "", "", "engineering", "quality", "infra"])
        sub.mkdir(exist_ok=True)
        (sub / f"{slug(name)}.md").write_text(
            frontmatter(rng, name, with_tools) + "\n" + body(rng, name))
        names.append(name)
    return sorted(names)


# Three public collections in one project (issue 40): each in its own folder tree, up to four
# folders deep, most of their agents without `tools:`, and some names in two of them.
# (folder, depth of its subfolders, share of its agents without `tools:`; None: one in fifteen
# lists them, as in `generate`).
COLLECTIONS = [("collection-a", 1, None), ("collection-b", 2, 0.65), ("collection-c", 4, 0.4)]
FOLDERS = ["engineering", "quality", "infra", "data", "product", "security", "languages",
           "frontend", "backend", "ops"]


def generate_collections(root: Path, agents: int = 500, seed: int = 40) -> list:
    """Like `generate`, shaped as three collections side by side (the ~500-agent case of
    issue 40): nested folders, about two thirds without `tools:` (one in three of the third
    collection lists them), and one name in fourteen declared by two collections, which Claude
    Code and the hook then refuse as declared twice. Returns every declared name, sorted, a
    duplicated one once."""
    rng = random.Random(seed)
    d = root / ".claude" / "agents"
    d.mkdir(parents=True, exist_ok=True)
    used: set = set()
    names: list = []
    per = [agents // 3, agents // 3, agents - 2 * (agents // 3)]
    for (coll, depth, inherit), count in zip(COLLECTIONS, per):
        for i in range(count):
            if names and i % 14 == 5:
                name = rng.choice(names)  # the same agent, also in this collection
            else:
                name = agent_name(rng, i, used)
            with_tools = i % 15 == 7 if inherit is None else rng.random() >= inherit
            parts = [coll] + [rng.choice(FOLDERS) for _ in range(rng.randint(0, depth))]
            sub = d.joinpath(*parts)
            sub.mkdir(parents=True, exist_ok=True)
            f = sub / f"{slug(name)}.md"
            if f.exists():
                f = sub / f"{slug(name)}-{i}.md"
            f.write_text(
                frontmatter(rng, name, with_tools) + "\n" + body(rng, name))
            names.append(name)
    return sorted(set(names))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--collections", action="store_true",
                    help="three collections in nested folders, with duplicate names")
    a = ap.parse_args()
    gen = generate_collections if a.collections else generate
    names = gen(Path(a.dir), a.agents, a.seed)
    print(f"{len(names)} agents under {a.dir}/.claude/agents")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
