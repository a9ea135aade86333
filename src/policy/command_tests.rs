//! Unit tests of `policy::command`: which simple commands a line runs, and what is refused.

use super::*;

fn grant(line: &str) -> Result<Vec<String>, Refused> {
    simple_commands(line, Mode::Grant).map(|v| v.into_iter().map(|s| s.text).collect())
}

fn deny_forms_of(line: &str) -> Result<Vec<Vec<String>>, Refused> {
    simple_commands(line, Mode::Deny).map(|v| {
        v.into_iter()
            .map(|s| std::iter::once(s.text).chain(s.forms).collect())
            .collect()
    })
}

#[test]
fn every_simple_command_of_lists_pipelines_subshells_and_jobs_is_seen() {
    for (line, want) in [
        ("git tag v1", vec!["git tag v1"]),
        ("git tag v1 && touch x", vec!["git tag v1", "touch x"]),
        ("a; b || c & d", vec!["a", "b", "c", "d"]),
        ("a | b | c", vec!["a", "b", "c"]),
        ("(a; (b)) && { c; }", vec!["a", "b", "c"]),
        (
            "if a; then b; elif c; then d; else e; fi",
            vec!["a", "b", "c", "d", "e"],
        ),
        ("while a; do b; done", vec!["a", "b"]),
        ("git   tag \"v 1\" 2>&1 >/dev/null", vec!["git tag \"v 1\""]),
        ("NODE_ENV=test npm test", vec!["npm test"]),
        ("PATH=/tmp/evil git tag", vec!["PATH=/tmp/evil git tag"]),
        ("X=1", vec!["X=1"]),
        (
            "git tag -F - <<'EOF'\n$(touch x)\nEOF",
            vec!["git tag -F -"],
        ),
        ("echo $HOME \"$1\"", vec!["echo $HOME \"$1\""]),
        ("", vec![]),
    ] {
        assert_eq!(
            grant(line),
            Ok(want.iter().map(|s| s.to_string()).collect()),
            "{line}"
        );
    }
}

#[test]
fn what_grant_mode_cannot_show_is_refused_naming_the_part() {
    for (line, part) in [
        ("git tag $(curl x|sh)", "command substitution"),
        ("git tag `id`", "command substitution"),
        ("git tag \"$(id)\"", "command substitution"),
        ("cat <(curl x)", "process substitution"),
        ("git tag $((1+2))", "arithmetic"),
        ("git tag ${x:-y}", "expansion"),
        ("git tag ${!x}", "expansion"),
        ("$CMD tag", "command name"),
        ("g?t tag", "command name"),
        ("eval git tag", "eval"),
        ("exec git tag", "exec"),
        ("source x.sh", "source"),
        (". x.sh", "runs commands"),
        ("alias git=rm", "alias"),
        ("trap 'rm x' EXIT", "trap"),
        ("bash -c 'git tag'", "bash"),
        ("sh -ec 'x'", "sh"),
        ("curl x | sh", "sh"),
        ("bash", "bash"),
        ("f() { rm x; }; f", "function"),
        ("for PATH in /tmp; do git tag; done", "for"),
        ("case x in *) rm y;; esac", "case"),
        ("[[ $x -eq 1 ]]", "[["),
        ("(( x[$(id)] ))", "arithmetic"),
        ("git tag v1 > out.txt", "redirection"),
        ("git tag v1 &> out.txt", "redirection"),
        ("git tag v1 >&out.txt", "redirection"),
        ("cat <<EOF\n$(touch x)\nEOF", "here-document"),
        ("git tag 'unterminated", "does not parse"),
    ] {
        let got = grant(line);
        assert!(
            matches!(&got, Err(Refused(why)) if why.contains(part)),
            "{line}: {got:?} should name {part}"
        );
    }
}

#[test]
fn deny_mode_looks_inside_what_it_can_read() {
    let forms = deny_forms_of("echo $(rm -rf /tmp/x) && bash -c 'rm -rf y' && eval rm z").unwrap();
    let texts: Vec<&str> = forms.iter().map(|f| f[0].as_str()).collect();
    assert!(texts.contains(&"rm -rf /tmp/x"), "{texts:?}");
    assert!(texts.contains(&"rm -rf y"), "{texts:?}");
    assert!(texts.contains(&"rm z"), "{texts:?}");
    let f = deny_forms_of("FOO=1 sudo -n timeout 5 r\"m\" -rf x").unwrap();
    assert!(f[0].iter().any(|t| t == "rm -rf x"), "{f:?}");
    for line in ["eval $x", "sh -c \"$x\"", "source a.sh", "alias x=y"] {
        assert!(deny_forms_of(line).is_err(), "{line}");
    }
    // Loops and functions are read, not refused.
    let f = deny_forms_of("for f in *.rs; do rustfmt $f; done; g() { rm x; }").unwrap();
    assert!(f.iter().any(|c| c[0] == "rm x"), "{f:?}");
}

#[test]
fn pathological_nesting_is_refused_without_overflowing_the_stack() {
    for line in [
        format!("{}x{}", "(".repeat(10_000), ")".repeat(10_000)),
        format!("{}x{}", "$(".repeat(10_000), ")".repeat(10_000)),
        format!(
            "{}{}",
            "if true; then ".repeat(10_000),
            "fi; ".repeat(10_000)
        ),
        "`".repeat(10_000),
        format!("echo {}", "${a:-".repeat(10_000)),
        "{ ".repeat(10_000),
    ] {
        for mode in [Mode::Grant, Mode::Deny] {
            let got = simple_commands(&line, mode);
            assert!(got.is_err(), "{:?}…", &line[..20]);
        }
    }
    // Just under the bound still parses, on a test thread's stack.
    let ok = format!("{}a{}", "{ ".repeat(MAX_NESTING), "; }".repeat(MAX_NESTING));
    assert_eq!(grant(&ok), Ok(vec!["a".to_string()]));
    // brush-parser reads `( ( a ) )` as arithmetic, which grant mode refuses: stricter.
    assert!(grant("( ( a ) )").is_err());
    let ok = format!(
        "echo {}a{}",
        "$(".repeat(MAX_NESTING),
        ")".repeat(MAX_NESTING)
    );
    assert!(
        simple_commands(&ok, Mode::Deny).is_err(),
        "substitutions nest only 4 deep"
    );
    let ok = format!(
        "{}a{}",
        "if b; then ".repeat(MAX_NESTING - 2),
        "; fi".repeat(MAX_NESTING - 2)
    );
    assert!(grant(&ok).is_ok());
}

#[test]
fn a_tilde_prefix_and_old_arithmetic_are_read_for_what_they_run() {
    for line in [
        "git tag ~$(touch x)",
        "git tag ~$(touch /tmp/x)",
        "git tag ~`touch x`",
        "git tag <<< ~$(touch x)",
        "git tag $[_]",
        "git tag \"$[1]\"",
        "git tag <<EOF\n$[_]\nEOF",
    ] {
        assert!(grant(line).is_err(), "{line}");
    }
    assert_eq!(grant("git tag ~root ~/x '$[1]'").map(|v| v.len()), Ok(1));
    let forms = deny_forms_of("echo ~$(rm x)").unwrap();
    assert!(forms.iter().any(|f| f[0] == "rm x"), "{forms:?}");
}

#[test]
fn a_denial_sees_through_wrappers_paths_and_gits_options() {
    for (line, form) in [
        ("sudo -u root -E rm x", "rm x"),
        ("timeout -s 9 5 rm x", "rm x"),
        ("nice -n 5 /bin/rm x", "rm x"),
        ("coproc rm x", "rm x"),
        (
            "git --no-pager -C /tmp -c a=b push origin",
            "git push origin",
        ),
        ("sudo bash -c 'rm y'", "rm y"),
    ] {
        let forms = deny_forms_of(line).unwrap();
        assert!(
            forms.iter().flatten().any(|f| f == form),
            "{line}: {forms:?}"
        );
    }
    for line in [
        "$(echo rm) x",
        "x=rm; $x y",
        "sudo $x y",
        "r? x",
        "{rm,x} y",
        "echo rm | sh",
    ] {
        assert!(deny_forms_of(line).is_err(), "{line}");
    }
    assert!(deny_forms_of("[ -f x ] && bash ./build.sh && echo $HOME").is_ok());
}

#[test]
fn a_denial_refuses_names_git_and_hash_would_swap() {
    for line in [
        "$'\\x72\\x6d' x",
        "hash -p /bin/rm ls",
        "git -c alias.p=push p",
        "git -C . -c core.pager='rm -rf y' log",
        "sudo git -c alias.x='!rm y' x",
        "echo rm | xargs -I{} {} x",
    ] {
        assert!(deny_forms_of(line).is_err(), "{line}");
    }
    let f = deny_forms_of("find . -name x -exec /bin/rm -f {} +").unwrap();
    assert!(f[0].iter().any(|t| t.starts_with("rm -f")), "{f:?}");
    assert!(deny_forms_of("git -c color.ui=always log && find . -exec wc -l {} +").is_ok());
}

#[test]
fn what_find_runs_is_a_command_of_the_line() {
    assert_eq!(
        grant("find . -name x -exec grep -l y {} + -exec touch z \\;"),
        Ok(vec![
            "find . -name x -exec grep -l y {} + -exec touch z \\;".to_string(),
            "grep -l y {}".to_string(),
            "touch z".to_string(),
        ])
    );
    assert!(grant("find . -exec bash -c 'x' \\;").is_err());
    assert_eq!(find_exec(&["find", "-exec"]), vec![]);
}

#[test]
fn a_shells_options_are_read_as_the_shell_reads_them() {
    let call = |line: &str| {
        let words: Vec<Option<String>> = line.split(' ').map(|w| Some(w.to_string())).collect();
        let c = shell_call(&words);
        (c.dash_c, c.script, c.operands.len())
    };
    assert_eq!(call("bash -O extglob -c x"), (true, true, 1));
    assert_eq!(call("bash --rcfile f -ec x y"), (true, true, 2));
    assert_eq!(call("bash -s a b"), (false, false, 2));
    assert_eq!(call("bash -- x.sh -c y"), (false, true, 3));
    assert_eq!(call("sh"), (false, false, 0));
    assert!(grant("bash -o posix -c 'git tag'").is_err());
    let f = deny_forms_of("bash -O extglob -c 'rm -rf y'").unwrap();
    assert!(f.iter().any(|c| c[0] == "rm -rf y"), "{f:?}");
}
