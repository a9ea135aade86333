//! Where the outbox ships to: `[ship] url`, parsed and checked when the configuration loads, so
//! a typo is a config error like any other rather than a shipper that fails later in the dark.

use std::path::PathBuf;

/// A store the outbox can ship to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `s3://bucket/prefix`: any S3-compatible store. Endpoint, region and credentials come
    /// from the store's standard environment (`AWS_*`), never from the project.
    S3 { bucket: String, prefix: Vec<String> },
    /// `file:///mounted/share`: a directory (typically a mounted share), which must exist.
    File { root: PathBuf },
}

/// Why a store URL cannot be used: the URL and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ship.url {url:?} {problem}")]
pub struct TargetError {
    pub url: String,
    pub problem: UrlProblem,
}

/// What is wrong with a store URL, and what a valid one looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    #[error("names bucket {0:?}, which is not an S3 bucket name (3 to 63 of a-z, 0-9, '.', '-'; write s3://bucket/prefix)")]
    Bucket(String),
    #[error("has the prefix component {0:?}; use only A-Z, a-z, 0-9, '.', '_' and '-', no empty, '.' or '..' components")]
    PrefixComponent(String),
    #[error("is not a local file URL; write file:///absolute/path (no host, no %-escapes)")]
    NotLocal,
    #[error("is neither s3://bucket/prefix nor file:///absolute/path")]
    Scheme,
}

impl Target {
    /// Parses `[ship] url`. The error says what is wrong and what a valid URL looks like.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let bad = |problem| TargetError {
            url: url.to_string(),
            problem,
        };
        if let Some(rest) = url.strip_prefix("s3://") {
            let mut parts = rest.split('/');
            let bucket = parts.next().unwrap_or_default();
            if !bucket_name_ok(bucket) {
                return Err(bad(UrlProblem::Bucket(bucket.to_string())));
            }
            // A trailing slash is allowed; an empty component elsewhere is a typo.
            let mut prefix: Vec<String> = parts.map(str::to_string).collect();
            if prefix.last().is_some_and(String::is_empty) {
                prefix.pop();
            }
            if let Some(c) = prefix.iter().find(|c| !super::component_ok(c)) {
                return Err(bad(UrlProblem::PrefixComponent(c.clone())));
            }
            return Ok(Target::S3 {
                bucket: bucket.to_string(),
                prefix,
            });
        }
        if let Some(path) = url.strip_prefix("file://") {
            // No percent-decoding, queries or hosts: a path written as it is.
            if !path.starts_with('/') || path.contains(['%', '?', '#']) {
                return Err(bad(UrlProblem::NotLocal));
            }
            return Ok(Target::File {
                root: PathBuf::from(path),
            });
        }
        Err(bad(UrlProblem::Scheme))
    }
}

fn bucket_name_ok(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
        && !b.starts_with(['.', '-'])
        && !b.ends_with(['.', '-'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_or_say_what_is_wrong() {
        assert_eq!(
            Target::parse("s3://evidence/team-a/").unwrap(),
            Target::S3 {
                bucket: "evidence".into(),
                prefix: vec!["team-a".into()]
            }
        );
        assert_eq!(
            Target::parse("s3://evidence").unwrap(),
            Target::S3 {
                bucket: "evidence".into(),
                prefix: vec![]
            }
        );
        assert_eq!(
            Target::parse("file:///mnt/share").unwrap(),
            Target::File {
                root: "/mnt/share".into()
            }
        );
        for bad in [
            "s3://Evidence/x",
            "s3://ab",
            "s3://evidence//x",
            "s3://evidence/../x",
            "s3://evidence/a b",
            "file://host/share",
            "file:///a%20b",
            "https://s3.example/bucket",
            "",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_url_is_named_with_what_is_wrong() {
        let e = Target::parse("s3://ab/x").unwrap_err();
        assert_eq!(e.problem, UrlProblem::Bucket("ab".into()));
        assert_eq!(
            e.to_string(),
            "ship.url \"s3://ab/x\" names bucket \"ab\", which is not an S3 bucket name (3 to 63 of a-z, 0-9, '.', '-'; write s3://bucket/prefix)"
        );
        let e = Target::parse("s3://evidence/a b").unwrap_err();
        assert_eq!(e.problem, UrlProblem::PrefixComponent("a b".into()));
        assert_eq!(
            Target::parse("file://host/x").unwrap_err().problem,
            UrlProblem::NotLocal
        );
        assert_eq!(
            Target::parse("https://x").unwrap_err().problem,
            UrlProblem::Scheme
        );
    }
}
