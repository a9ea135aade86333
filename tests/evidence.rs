//! Evidence: what `export` writes and `verify` says about it, in words a reviewer and a script
//! can depend on. (Conformance with the reference verifier is in conformance.rs.)

mod common;
use attenu_hook::evidence::verify::FailureName;

#[test]
fn every_failure_name_is_stable_kebab_case_and_unique() {
    let mut seen = std::collections::HashSet::new();
    for name in FailureName::ALL {
        let s = name.as_str();
        assert!(
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{s} is not kebab-case"
        );
        assert!(seen.insert(s), "{s} is used twice");
        assert_eq!(FailureName::from_name(s), Some(*name));
    }
}
