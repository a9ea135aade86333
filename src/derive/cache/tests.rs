//! The roster cache's tests: reuse, edits, seals, and the table of agent files.

use super::*;
use crate::derive::declarations::list_agent_files_stat;
use crate::derive::list_agent_files;

const KEY: [u8; 32] = [7; 32];

/// A project with one agent, and its state directory.
fn project() -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!(
        "attenu-roster-cache-{}-{}",
        std::process::id(),
        crate::ledger::chain::hex(&rand_bytes())
    ));
    std::fs::create_dir_all(root.join(".claude/agents")).unwrap();
    std::fs::create_dir_all(root.join(".attenu")).unwrap();
    write_agent(&root, "Read, Grep");
    (root.clone(), root.join(".attenu"))
}

fn rand_bytes() -> [u8; 6] {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).unwrap();
    b
}

/// Writes the agent file with `tools`; `age` back-dates its mtime, as a write that
/// happened that long ago would have left it.
fn write_agent_aged(root: &Path, tools: &str, age: Duration) {
    let path = root.join(".claude/agents/reviewer.md");
    std::fs::write(
        &path,
        format!("---\nname: reviewer\ndescription: reads\ntools: {tools}\n---\nReview.\n"),
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - age)
        .unwrap();
}

fn write_agent(root: &Path, tools: &str) {
    write_agent_aged(root, tools, Duration::from_secs(60));
}

/// The cached roster for `key`, as a call with inputs of that key reads it.
fn read_roster(path: &Path, mac_key: &[u8; 32], key: &str) -> Option<Roster> {
    read(path, mac_key)?.roster(key)
}

fn later() -> SystemTime {
    SystemTime::now() + SETTLE * 2
}

/// The cache key of the project's inputs as they are now, once settled.
fn key_of(root: &Path) -> String {
    let listed = list_agent_files_stat(root).unwrap();
    stamp(root, &listed, (&BTreeMap::new(), None), later())
        .unwrap()
        .key
}

fn derive(root: &Path, attenu: &Path, now: SystemTime) -> Roster {
    derive_cached_at(root, (&BTreeMap::new(), None), attenu, &KEY, now)
        .unwrap()
        .0
}

#[test]
fn a_settled_derivation_is_reused_and_an_edit_is_seen() {
    let (root, attenu) = project();
    let cache = attenu.join(CACHE_FILE);
    // Inputs written just now are not settled: nothing is cached.
    let fresh = derive(&root, &attenu, SystemTime::now());
    assert!(!cache.exists());
    // Once they are, the roster is cached and read back as it was derived.
    assert_eq!(derive(&root, &attenu, later()), fresh);
    assert!(cache.exists());
    let key = key_of(&root);
    assert_eq!(read_roster(&cache, &KEY, &key).as_ref(), Some(&fresh));
    // An edit of the same size is seen: a later write leaves a later time. (Two writes
    // within one timestamp tick could leave the same one; that is why only settled
    // inputs are cached, which `later()` pretends they are here.)
    write_agent_aged(&root, "Glob, Read", Duration::from_secs(30));
    let edited = derive(&root, &attenu, later());
    assert_ne!(
        edited.agents["reviewer"].scopes,
        fresh.agents["reviewer"].scopes
    );
    assert!(edited.agents["reviewer"].scopes.contains("fs.glob"));
    // A new agent file, or settings appearing, change the key too.
    std::fs::write(
        root.join(".claude/agents/second.md"),
        "---\nname: second\ndescription: x\ntools: Read\n---\n",
    )
    .unwrap();
    assert!(derive(&root, &attenu, later())
        .agents
        .contains_key("second"));
    std::fs::write(
        root.join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Read"]}}"#,
    )
    .unwrap();
    let denied = derive(&root, &attenu, later());
    assert!(!denied.root.iter().any(|s| s == "fs.read"), "{denied:?}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_agent_file_gone_between_listing_and_stamping_is_not_cached() {
    let (root, attenu) = project();
    let mut listed = list_agent_files_stat(&root).unwrap();
    let stamped = |listed: &[StatListed]| stamp(&root, listed, (&BTreeMap::new(), None), later());
    assert!(stamped(&listed).is_some());
    let vanished = root.join(".claude/agents/vanished.md");
    let gone = std::fs::metadata(&vanished);
    listed.push((vanished, gone));
    assert!(stamped(&listed).is_none());
    assert!(!attenu.join(CACHE_FILE).exists());
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_cache_this_hook_did_not_seal_is_not_read() {
    let (root, attenu) = project();
    let cache = attenu.join(CACHE_FILE);
    let honest = derive(&root, &attenu, later());
    let key = key_of(&root);
    // A roster changed in place into another well-formed one (its Grep now a scope it
    // never held): only the seal stops it.
    let text = std::fs::read(&cache).unwrap();
    let roster_part = read(&cache, &KEY).unwrap().roster;
    // In the scope table, after the slices (`slice`), which a pin's call reads.
    let slices = slice::split(&text[roster_part.clone()]).unwrap().slices;
    let table = slices.as_ptr() as usize - text.as_ptr() as usize + slices.len();
    let at = table
        + text[table..]
            .windows(7)
            .position(|w| w == b"fs.grep")
            .unwrap();
    let mut widened = text.clone();
    widened[at..at + 7].copy_from_slice(b"fs.hack");
    let (_, forged) = codec::decode(&widened[roster_part]).expect("still a well-formed body");
    assert!(forged.agents["reviewer"].scopes.contains("fs.hack"));
    std::fs::write(&cache, &widened).unwrap();
    assert_eq!(read_roster(&cache, &KEY, &key), None);
    // Sealed with another key.
    std::fs::write(&cache, &text).unwrap();
    assert!(read_roster(&cache, &KEY, &key).is_some());
    assert_eq!(read_roster(&cache, &[8; 32], &key), None);
    // Derivation goes back to the files and replaces the file.
    std::fs::write(&cache, &widened).unwrap();
    assert_eq!(derive(&root, &attenu, later()), honest);
    assert_eq!(std::fs::read(&cache).unwrap(), text);
    // A symlink in its place is never followed.
    std::fs::remove_file(&cache).unwrap();
    std::os::unix::fs::symlink(root.join("elsewhere"), &cache).unwrap();
    assert_eq!(read_roster(&cache, &KEY, &key), None);
    std::fs::remove_dir_all(&root).unwrap();
}

/// Writes `text` to the agent file `rel`, its mtime set `age` back from now (each step of
/// a test gets its own, so no two versions of a file share a stamp).
fn put(root: &Path, rel: &str, text: &str, age: Duration) {
    let path = root.join(".claude/agents").join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

/// The roster from the files alone, no cache involved.
fn scratch(root: &Path) -> Roster {
    derive_from(
        root,
        list_agent_files(root).unwrap(),
        &BTreeMap::new(),
        None,
    )
    .unwrap()
}

/// An agent file declaring `name` with the frontmatter lines `rest`.
fn agent(name: &str, rest: &str) -> String {
    format!("---\nname: {name}\n{rest}---\nBody.\n")
}

/// A change to a project; it writes agent files through the given step.
type Change = dyn Fn(&Path, &mut dyn FnMut(&Path, &str, &str));

/// The differential test: after every kind of change (edits of the same size, agents
/// added, removed, renamed and swapped, files broken and mended, duplicates, a link, the
/// settings), the roster derived through the table equals the one derived from scratch.
#[test]
fn an_incremental_derivation_equals_one_from_scratch() {
    let (root, attenu) = project();
    let mut age = 1000u64;
    let mut step = |root: &Path, rel: &str, text: &str| {
        age -= 1;
        put(root, rel, text, Duration::from_secs(age));
    };
    for i in 0..12 {
        let rest = match i % 4 {
            0 => "description: inherits\n".to_string(),
            1 => "disallowedTools: Bash, Write\n".to_string(),
            2 => format!("tools: Read, Agent(a{})\n", (i + 1) % 12),
            _ => "tools: [Grep, mcp__pay]\ndisallowedTools: mcp__pay__refund\n".to_string(),
        };
        step(
            &root,
            &format!("team/a{i}.md"),
            &agent(&format!("a{i}"), &rest),
        );
    }
    let agents = root.join(".claude/agents");
    let changes: Vec<Box<Change>> = vec![
        Box::new(|_, _| {}),
        Box::new(|r, s| s(r, "team/a2.md", &agent("a2", "tools: Bash, Agent(a3)\n"))),
        Box::new(|r, s| s(r, "team/a0.md", &agent("a0", "tools: Read\n"))),
        Box::new(|r, s| s(r, "new/b.md", &agent("b", "disallowedTools: Read\n"))),
        Box::new(|r, _| std::fs::remove_file(r.join(".claude/agents/team/a5.md")).unwrap()),
        Box::new(|r, _| {
            let a = r.join(".claude/agents");
            std::fs::rename(a.join("team/a6.md"), a.join("moved.md")).unwrap();
        }),
        Box::new(|r, _| {
            let a = r.join(".claude/agents/team");
            std::fs::rename(a.join("a7.md"), a.join("tmp")).unwrap();
            std::fs::rename(a.join("a8.md"), a.join("a7.md")).unwrap();
            std::fs::rename(a.join("tmp"), a.join("a8.md")).unwrap();
        }),
        Box::new(|r, s| s(r, "team/a9.md", "---\nname: a9\n  tools: Read\n---\n")),
        Box::new(|r, s| s(r, "team/a10.md", "no frontmatter at all\n")),
        Box::new(|r, s| s(r, "team/a9.md", &agent("a9", "tools: Glob\n"))),
        Box::new(|r, s| s(r, "copy.md", &agent("a1", "tools: Read\n"))),
        Box::new(|r, _| {
            let a = r.join(".claude/agents");
            std::os::unix::fs::symlink(a.join("team/a3.md"), a.join("link.md")).unwrap();
        }),
        Box::new(|r, _| {
            std::fs::write(
                r.join(".claude/settings.json"),
                r#"{"permissions": {"allow": ["WebFetch"], "deny": ["Grep"]}}"#,
            )
            .unwrap();
        }),
        Box::new(|r, s| s(r, "team/a11.md", &agent("a11", "tools: '*'\n"))),
        Box::new(|r, _| std::fs::remove_file(r.join(".claude/agents/copy.md")).unwrap()),
    ];
    for (i, change) in changes.iter().enumerate() {
        change(&root, &mut step);
        let incremental = derive(&root, &attenu, later());
        assert_eq!(incremental, scratch(&root), "after change {i}");
        // The cache now holds this derivation and a table entry for every file read.
        let table = read(&attenu.join(TABLE_FILE), &KEY)
            .and_then(|c| c.files())
            .unwrap();
        let listed = list_agent_files(&root).unwrap();
        assert_eq!(
            table.len(),
            listed.len() - usize::from(i >= 11),
            "after change {i}"
        );
        // An unsettled call (the edit just made) derives the same roster again.
        let fresh = derive(&root, &attenu, SystemTime::now());
        assert_eq!(fresh, incremental, "unsettled, after change {i}");
    }
    assert!(agents.join("moved.md").exists());
    std::fs::remove_dir_all(&root).unwrap();
}

/// Seals a cache whose roster matches no key and whose table holds `entries`.
fn plant(attenu: &Path, entries: &[(&[u8], StampBytes, crate::derive::declarations::Parsed)]) {
    let roster = scratch(attenu.parent().unwrap());
    let mut body = Vec::new();
    codec::put_bytes(&mut body, &codec::encode("no such key", &roster, &KEY));
    codec::put_bytes(&mut body, &[]);
    files::encode(
        &mut body,
        &build(),
        entries.iter().map(|(p, s, x)| (*p, s, x)),
    );
    let tag = CACHE.tag(&KEY, &body);
    let mut file = format!("{}{tag}\n", CACHE.header).into_bytes();
    file.extend_from_slice(&body);
    std::fs::write(attenu.join(TABLE_FILE), file).unwrap();
    // A cached roster would be used before the table is read.
    let _ = std::fs::remove_file(attenu.join(CACHE_FILE));
}

/// A table entry stands in for its file only while the file has the entry's stamp and
/// that stamp is settled; a planted parse (one the file does not say) shows when it is used.
#[test]
fn a_table_entry_is_used_only_for_its_own_settled_stamp() {
    let (root, attenu) = project();
    let file = root.join(".claude/agents/reviewer.md");
    let planted = |stamp: StampBytes| {
        let parse = Ok(crate::derive::frontmatter::AgentFile {
            name: "reviewer".into(),
            tools: Some(vec!["Bash".into()]),
            disallowed: vec![],
        });
        plant(&attenu, &[(b".claude/agents/reviewer.md", stamp, parse)]);
    };
    let holds_bash = |r: &Roster| r.agents["reviewer"].scopes.contains("exec.bash");
    let own = stamp_bytes(&std::fs::metadata(&file).unwrap());
    // Written just now, the file's ctime is not settled: it is read, the entry ignored.
    planted(own);
    assert!(!holds_bash(&derive(&root, &attenu, SystemTime::now())));
    // Settled, with the entry's stamp: the entry is used and the file not read.
    assert!(holds_bash(&derive(&root, &attenu, later())));
    // Any other stamp (here another mtime) and the file is read again.
    let mut other = own;
    other[24] ^= 1;
    planted(other);
    assert!(!holds_bash(&derive(&root, &attenu, later())));
    // A table of another build is not read.
    planted(own);
    let text = std::fs::read(attenu.join(TABLE_FILE)).unwrap();
    let build = build();
    let at = text
        .windows(build.len())
        .position(|w| w == build.as_bytes())
        .unwrap();
    let mut forged = text.clone();
    forged[at] = b'0';
    let body = &forged[CACHE.header.len() + 65..];
    let tag = CACHE.tag(&KEY, body);
    forged[CACHE.header.len()..CACHE.header.len() + 64].copy_from_slice(tag.as_bytes());
    std::fs::write(attenu.join(TABLE_FILE), &forged).unwrap();
    assert!(!holds_bash(&derive(&root, &attenu, later())));
    std::fs::remove_dir_all(&root).unwrap();
}

/// While no directory it read has changed, the listing kept with the cache is the tree's; an
/// entry added, removed or renamed in any of them ends it, and a tree with a link keeps none.
#[test]
fn a_kept_listing_stands_for_the_tree_until_a_directory_changes() {
    let (root, attenu) = project();
    let agents = root.join(".claude/agents");
    std::fs::create_dir_all(agents.join("team/deep")).unwrap();
    put(
        &root,
        "team/deep/a.md",
        &agent("a", "tools: Read\n"),
        Duration::from_secs(60),
    );
    std::fs::write(agents.join("team/notes.txt"), "x").unwrap();
    // Every directory's mtime a minute back: any change after it leaves another.
    let backdate = || {
        for dir in ["", "team", "team/deep"] {
            let d = std::fs::File::open(agents.join(dir)).unwrap();
            d.set_modified(SystemTime::now() - Duration::from_secs(60))
                .unwrap();
        }
    };
    backdate();
    let names = |l: Vec<StatListed>| -> Vec<PathBuf> { l.into_iter().map(|(p, _)| p).collect() };
    let kept = || -> Option<Vec<PathBuf>> {
        let c = read(&attenu.join(CACHE_FILE), &KEY)?;
        listing::relist(&root, c.listing()?).map(names)
    };
    derive(&root, &attenu, later());
    let tree = names(list_agent_files_stat(&root).unwrap());
    assert_eq!(tree.len(), 2);
    assert_eq!(kept(), Some(tree));
    // An agent file added deep in the tree: the listing no longer stands; the derivation
    // that sees the file keeps the new one.
    put(
        &root,
        "team/deep/b.md",
        &agent("b", "tools: Grep\n"),
        Duration::from_secs(60),
    );
    assert_eq!(kept(), None);
    backdate();
    derive(&root, &attenu, later());
    assert_eq!(kept().map(|l| l.len()), Some(3));
    // Any entry removed or renamed, even one that is not an agent file.
    std::fs::remove_file(agents.join("team/notes.txt")).unwrap();
    assert_eq!(kept(), None);
    // The cache's roster still holds: a session's first call keeps the tree's listing again.
    let configured = (&BTreeMap::new(), None);
    assert!(derive_cached_part_at(&root, configured, &attenu, &KEY, later()).is_ok());
    assert_eq!(kept().map(|l| l.len()), Some(3));
    std::fs::rename(agents.join("team/deep/a.md"), agents.join("team/deep/c.md")).unwrap();
    assert_eq!(kept(), None);
    std::fs::rename(agents.join("team/deep/c.md"), agents.join("team/deep/a.md")).unwrap();
    assert_eq!(kept(), None, "a rename back leaves another stamp");
    // A link anywhere in the tree: no listing is kept, the tree is listed every time.
    std::os::unix::fs::symlink(root.join("elsewhere"), agents.join("team/linked")).unwrap();
    derive(&root, &attenu, later());
    let c = read(&attenu.join(CACHE_FILE), &KEY).unwrap();
    assert_eq!(c.listing(), Some(&[][..]));
    std::fs::remove_dir_all(&root).unwrap();
}
