//! S3 settings as teams keep them, for the shipper only (never the hook): the shared config
//! and credentials files with profiles (`AWS_PROFILE`, `AWS_CONFIG_FILE`,
//! `AWS_SHARED_CREDENTIALS_FILE`), turned into the `AWS_*` settings object_store reads. Web
//! identity (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, STS AssumeRoleWithWebIdentity) is
//! object_store's own; a profile may name it too. SSO and `credential_process` are refused with
//! what to run instead (docs/SHIPPING.md, "Credentials").
//!
//! The files are INI with `key = value` lines; reading the few keys used here takes less code
//! than a dependency would.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why a profile cannot give the shipper its settings; the text says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// `AWS_PROFILE` names a profile neither file has (each file as shown to the user).
    #[error("the profile {profile} (AWS_PROFILE) is in neither {credentials} nor {config}; add it there, or unset AWS_PROFILE")]
    NotFound {
        profile: String,
        credentials: String,
        config: String,
    },
    /// The profile's credentials come from a program the shipper does not run.
    #[error("the profile {profile} gets its credentials through `{how}`, which the shipper does not run; give it credentials in the environment, for example `eval \"$(aws configure export-credentials --profile {profile} --format env)\"` (after `aws sso login` for SSO), or use web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN)")]
    Unsupported { profile: String, how: &'static str },
}

/// A profile's key to the setting it gives, for the keys object_store reads.
const FROM_PROFILE: &[(&str, &str)] = &[
    ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
    ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
    ("aws_session_token", "AWS_SESSION_TOKEN"),
    ("region", "AWS_REGION"),
    ("endpoint_url", "AWS_ENDPOINT_URL"),
    ("web_identity_token_file", "AWS_WEB_IDENTITY_TOKEN_FILE"),
    ("role_arn", "AWS_ROLE_ARN"),
    ("role_session_name", "AWS_ROLE_SESSION_NAME"),
];

/// Settings that say where credentials come from: with any in the environment, a profile's
/// credentials are not used (the environment wins, as in the AWS CLI).
const CREDENTIAL_SOURCES: &[&str] = &["AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE"];

/// `env` with what the profile adds: each setting of the profile the environment lacks (for
/// credentials, only when the environment names none). The profile is `AWS_PROFILE`, else
/// `AWS_DEFAULT_PROFILE`, else `default`; a profile named but found in neither file is an
/// error, a missing `default` is not.
pub fn with_profile(mut env: Vec<(String, String)>) -> Result<Vec<(String, String)>, ProfileError> {
    let get = |env: &[(String, String)], k: &str| {
        env.iter()
            .find(|(n, v)| n == k && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let named = get(&env, "AWS_PROFILE").or_else(|| get(&env, "AWS_DEFAULT_PROFILE"));
    let profile = named.clone().unwrap_or_else(|| "default".into());
    let home = get(&env, "HOME").map(PathBuf::from);
    let file = |var: &str, default: &str| {
        get(&env, var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)))
    };
    let credentials_file = file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    let config_file = file("AWS_CONFIG_FILE", ".aws/config");
    // The config file names a profile `[profile NAME]`, except `[default]`; the credentials
    // file names it `[NAME]`. Credentials in the credentials file win.
    let config_section = match profile.as_str() {
        "default" => "default".to_string(),
        p => format!("profile {p}"),
    };
    let mut found = false;
    let mut settings = BTreeMap::new();
    for (path, section) in [
        (&config_file, config_section.as_str()),
        (&credentials_file, profile.as_str()),
    ] {
        let Some(path) = path else { continue };
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Some(keys) = section_of(&text, section) {
            found = true;
            settings.extend(keys);
        }
    }
    if !found {
        return match named {
            Some(profile) => Err(ProfileError::NotFound {
                profile,
                credentials: shown(&credentials_file),
                config: shown(&config_file),
            }),
            None => Ok(env),
        };
    }
    let env_has_credentials = CREDENTIAL_SOURCES.iter().any(|k| get(&env, k).is_some());
    let profile_has_credentials = FROM_PROFILE.iter().any(|(k, _)| {
        matches!(*k, "aws_access_key_id" | "web_identity_token_file") && settings.contains_key(*k)
    });
    if !env_has_credentials && !profile_has_credentials {
        if let Some(how) = ["sso_session", "sso_start_url", "credential_process"]
            .into_iter()
            .find(|k| settings.contains_key(*k))
        {
            return Err(ProfileError::Unsupported { profile, how });
        }
    }
    for (key, var) in FROM_PROFILE {
        let is_credential = !matches!(*key, "region" | "endpoint_url");
        let skip = get(&env, var).is_some()
            || (is_credential && env_has_credentials)
            || (*var == "AWS_REGION" && get(&env, "AWS_DEFAULT_REGION").is_some());
        if let (false, Some(value)) = (skip, settings.get(*key)) {
            env.push((var.to_string(), value.clone()));
        }
    }
    Ok(env)
}

fn shown(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "~/.aws (HOME is not set)".into())
}

/// The `key = value` lines of `[section]` in INI `text`, keys lower-cased; `None` when the
/// section is absent. Comments start with `#` or `;`; an indented line continues a nested
/// value (`s3 =` blocks), which is skipped.
fn section_of(text: &str, section: &str) -> Option<BTreeMap<String, String>> {
    let mut inside = false;
    let mut found = None::<BTreeMap<String, String>>;
    for line in text.lines() {
        let nested = line.starts_with([' ', '\t']);
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = name == section;
            if inside {
                found.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if !inside || nested {
            continue;
        }
        if let (Some(keys), Some((k, v))) = (found.as_mut(), line.split_once('=')) {
            keys.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("attenu-creds-{name}-{}", std::process::id()));
        std::fs::create_dir_all(d.join(".aws")).unwrap();
        d
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn value(env: &[(String, String)], k: &str) -> Option<String> {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_named_profile_gives_credentials_region_and_endpoint() {
        let home = dir("named");
        std::fs::write(
            home.join(".aws/credentials"),
            "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n[team]\naws_access_key_id = AK\naws_secret_access_key = SK\n",
        )
        .unwrap();
        std::fs::write(
            home.join(".aws/config"),
            "[default]\nregion = eu-west-1\n[profile team]\nregion = garage\nendpoint_url = http://127.0.0.1:3900\ns3 =\n  addressing_style = path\n",
        )
        .unwrap();
        let h = home.to_str().unwrap();
        let out = with_profile(env(&[("HOME", h), ("AWS_PROFILE", "team")])).unwrap();
        assert_eq!(value(&out, "AWS_ACCESS_KEY_ID").as_deref(), Some("AK"));
        assert_eq!(value(&out, "AWS_REGION").as_deref(), Some("garage"));
        assert_eq!(
            value(&out, "AWS_ENDPOINT_URL").as_deref(),
            Some("http://127.0.0.1:3900")
        );
        assert!(value(&out, "addressing_style").is_none());
        // Without AWS_PROFILE, the default profile.
        let out = with_profile(env(&[("HOME", h)])).unwrap();
        assert_eq!(value(&out, "AWS_ACCESS_KEY_ID").as_deref(), Some("D"));
        assert_eq!(value(&out, "AWS_REGION").as_deref(), Some("eu-west-1"));
        // The environment's credentials and region win over the profile's.
        let out = with_profile(env(&[
            ("HOME", h),
            ("AWS_PROFILE", "team"),
            ("AWS_ACCESS_KEY_ID", "E"),
            ("AWS_SECRET_ACCESS_KEY", "ES"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ]))
        .unwrap();
        assert_eq!(value(&out, "AWS_ACCESS_KEY_ID").as_deref(), Some("E"));
        assert!(value(&out, "AWS_REGION").is_none());
        assert_eq!(
            out.iter()
                .filter(|(k, _)| k == "AWS_SECRET_ACCESS_KEY")
                .count(),
            1
        );
    }

    #[test]
    fn files_named_by_the_environment_and_web_identity_in_a_profile() {
        let home = dir("files");
        let config = home.join("cfg");
        std::fs::write(
            &config,
            "[profile ci]\nrole_arn = arn:aws:iam::1:role/ci\nweb_identity_token_file = /run/token\nregion = r\n",
        )
        .unwrap();
        let out = with_profile(env(&[
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/creds"),
            ("AWS_PROFILE", "ci"),
        ]))
        .unwrap();
        assert_eq!(
            value(&out, "AWS_ROLE_ARN").as_deref(),
            Some("arn:aws:iam::1:role/ci")
        );
        assert_eq!(
            value(&out, "AWS_WEB_IDENTITY_TOKEN_FILE").as_deref(),
            Some("/run/token")
        );
    }

    #[test]
    fn a_missing_profile_or_sso_says_what_to_do() {
        let home = dir("missing");
        let h = home.to_str().unwrap();
        let e = with_profile(env(&[("HOME", h), ("AWS_PROFILE", "nope")])).unwrap_err();
        assert!(
            matches!(&e, ProfileError::NotFound { profile, .. } if profile == "nope"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("the profile nope (AWS_PROFILE) is in neither"),
            "{e}"
        );
        // No files and no AWS_PROFILE: the environment as it was.
        let plain = env(&[("HOME", h), ("AWS_REGION", "x")]);
        assert_eq!(with_profile(plain.clone()).unwrap(), plain);
        std::fs::write(
            home.join(".aws/config"),
            "[profile dev]\nsso_session = corp\nregion = r\n",
        )
        .unwrap();
        let e = with_profile(env(&[("HOME", h), ("AWS_PROFILE", "dev")])).unwrap_err();
        assert_eq!(
            e,
            ProfileError::Unsupported {
                profile: "dev".into(),
                how: "sso_session"
            }
        );
        assert!(e.to_string().contains("export-credentials"), "{e}");
    }
}
