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

impl Target {
    /// Parses `[ship] url`. The error says what is wrong and what a valid URL looks like.
    pub fn parse(url: &str) -> Result<Target, String> {
        if let Some(rest) = url.strip_prefix("s3://") {
            let mut parts = rest.split('/');
            let bucket = parts.next().unwrap_or_default();
            if !bucket_name_ok(bucket) {
                return Err(format!(
                    "ship.url {url:?} names bucket {bucket:?}, which is not an S3 bucket name (3 to 63 of a-z, 0-9, '.', '-'; write s3://bucket/prefix)"
                ));
            }
            // A trailing slash is allowed; an empty component elsewhere is a typo.
            let mut prefix: Vec<String> = parts.map(str::to_string).collect();
            if prefix.last().is_some_and(String::is_empty) {
                prefix.pop();
            }
            if let Some(bad) = prefix.iter().find(|c| !super::component_ok(c)) {
                return Err(format!(
                    "ship.url {url:?} has the prefix component {bad:?}; use only A-Z, a-z, 0-9, '.', '_' and '-', no empty, '.' or '..' components"
                ));
            }
            return Ok(Target::S3 {
                bucket: bucket.to_string(),
                prefix,
            });
        }
        if let Some(path) = url.strip_prefix("file://") {
            // No percent-decoding, queries or hosts: a path written as it is.
            if !path.starts_with('/') || path.contains(['%', '?', '#']) {
                return Err(format!(
                    "ship.url {url:?} is not a local file URL; write file:///absolute/path (no host, no %-escapes)"
                ));
            }
            return Ok(Target::File {
                root: PathBuf::from(path),
            });
        }
        Err(format!(
            "ship.url {url:?} is neither s3://bucket/prefix nor file:///absolute/path"
        ))
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
}
