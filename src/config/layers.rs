//! The configuration's three layers: the administrator's machine-wide file, the team's
//! committed `.claude/attenu.toml`, and the clone's own `.attenu/config.toml` (or `.json`),
//! merged key by key, each over the one before; what the local file weakens is recorded.

use super::{read_optional, validate, Config, ConfigError, LayerProblem, Mode, MAX_CONFIG_BYTES};
use std::path::{Path, PathBuf};

/// The committed team file, relative to the project.
pub const TEAM_FILE: &str = ".claude/attenu.toml";
/// The machine-wide file an administrator sets (`ATTENU_ADMIN_CONFIG` names another, for
/// tests and for hosts that keep configuration elsewhere).
pub const ADMIN_FILE: &str = "/etc/attenu-hook/config.toml";

fn admin_path() -> PathBuf {
    std::env::var_os("ATTENU_ADMIN_CONFIG")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(ADMIN_FILE), PathBuf::from)
}

/// Loads the configuration of the project whose state directory is `attenu_dir`, from three
/// layers, each overriding the one before: the administrator's machine-wide file, the team's
/// committed `.claude/attenu.toml`, and the clone's own `.attenu/config.toml` (or `.json`).
/// A local value that weakens what the team or the administrator set still applies, and is
/// named in [`Config::overrides`] (recorded in each chain's root, shown by `audit`). No file
/// means the defaults; an unreadable or invalid file is an error that names it.
pub fn load(attenu_dir: &Path) -> Result<Config, ConfigError> {
    let project = attenu_dir.parent().unwrap_or(attenu_dir);
    let admin_file = admin_path();
    let admin = read_layer(&admin_file, false)?;
    let team_file = project.join(TEAM_FILE);
    let team = read_layer(&team_file, true)?;
    let toml_path = attenu_dir.join("config.toml");
    let json_path = attenu_dir.join("config.json");
    let local = match (read_optional(&toml_path)?, read_optional(&json_path)?) {
        (Some(_), Some(_)) => return Err(ConfigError::BothFiles),
        (Some(t), None) => {
            toml::from_str::<Config>(&t).map_err(ConfigError::InvalidToml)?;
            Some(t.parse::<toml::Table>().map_err(ConfigError::InvalidToml)?)
        }
        (None, Some(j)) => {
            // Checked as a configuration first, so its error names the key at fault.
            serde_json::from_str::<Config>(&j).map_err(ConfigError::InvalidJson)?;
            let value: serde_json::Value =
                serde_json::from_str(&j).map_err(ConfigError::InvalidJson)?;
            Some(
                toml::Table::try_from(value).map_err(|e| ConfigError::Layer {
                    path: json_path.clone(),
                    why: LayerProblem::NotToml(e),
                })?,
            )
        }
        (None, None) => None,
    };
    let mut sources = Vec::new();
    let mut base = toml::Table::new();
    for (path, layer) in [(&admin_file, admin), (&team_file, team)] {
        if let Some(t) = layer {
            sources.push(path.display().to_string());
            merge(&mut base, t);
        }
    }
    let team_view = finish(base.clone(), &sources)?;
    let mut config = team_view.clone();
    if let Some(t) = local {
        sources.push(attenu_dir.join("config.*").display().to_string());
        let mut all = base;
        merge(&mut all, t);
        config = finish(all, &sources)?;
        config.overrides = weakenings(&team_view, &config);
    }
    config.sources = sources;
    Ok(config)
}

fn finish(table: toml::Table, sources: &[String]) -> Result<Config, ConfigError> {
    let mut config: Config = table
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Layer {
            path: PathBuf::from(sources.join(" + ")),
            why: LayerProblem::Toml(e),
        })?;
    validate(&config)?;
    if config.derive.builtin_agents {
        crate::derive::builtin::expand(&mut config.agents);
    }
    Ok(config)
}

/// A layer's table, checked on its own so an error names the file that has it.
fn read_layer(path: &Path, owned: bool) -> Result<Option<toml::Table>, ConfigError> {
    let text = if owned {
        read_optional(path)?
    } else {
        read_admin(path)?
    };
    text.map(|t| parse_toml_layer(path, &t)).transpose()
}

fn parse_toml_layer(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    let layer_err = |e| ConfigError::Layer {
        path: path.to_path_buf(),
        why: LayerProblem::Toml(e),
    };
    toml::from_str::<Config>(text).map_err(layer_err)?;
    text.parse::<toml::Table>().map_err(layer_err)
}

/// The administrator's file: a regular file (links allowed, as configuration management
/// writes them) that only root or this user can change.
fn read_admin(path: &Path) -> Result<Option<String>, ConfigError> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::Layer {
                path: path.to_path_buf(),
                why: LayerProblem::Unreadable(e),
            })
        }
    };
    let mine = crate::fs::current_uid().is_some_and(|u| u == m.uid());
    if !m.is_file()
        || m.len() > MAX_CONFIG_BYTES
        || (m.uid() != 0 && !mine)
        || m.mode() & 0o022 != 0
    {
        return Err(ConfigError::Layer {
            path: path.to_path_buf(),
            why: LayerProblem::NotAnAdminFile,
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Layer {
        path: path.to_path_buf(),
        why: LayerProblem::Unreadable(e),
    })?;
    Ok(Some(text))
}

/// Later tables override earlier ones key by key; sub-tables merge.
fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// What the local file changed that makes enforcement or evidence weaker than the team's and
/// the administrator's configuration, one sentence each.
pub fn weakenings(team: &Config, local: &Config) -> Vec<String> {
    let strength = |m: Mode| match m {
        Mode::Enforce => 2,
        Mode::Shadow => 1,
        Mode::Observe => 0,
    };
    let mut out = Vec::new();
    if strength(local.mode) < strength(team.mode) {
        out.push(format!(
            "mode {} instead of {}",
            local.mode.as_str(),
            team.mode.as_str()
        ));
    }
    if team.enforce_main_thread && !local.enforce_main_thread {
        out.push("enforce_main_thread off".into());
    }
    if team.ship.url.is_some() && local.ship.url != team.ship.url {
        out.push(format!(
            "ship.url {} instead of {}",
            local.ship.url.as_deref().unwrap_or("unset"),
            team.ship.url.as_deref().unwrap_or("unset")
        ));
    }
    if team.export_on_stop && !local.export_on_stop {
        out.push("export_on_stop off".into());
    }
    if team.ship.checkpoint_every < local.ship.checkpoint_every {
        out.push(format!(
            "ship.checkpoint_every {} instead of {}",
            local.ship.checkpoint_every, team.ship.checkpoint_every
        ));
    }
    if team.trust.ca.iter().any(|c| !local.trust.ca.contains(c))
        || local.trust.ca.iter().any(|c| !team.trust.ca.contains(c))
    {
        out.push("trust.ca changed".into());
    }
    for p in team
        .gate
        .require
        .iter()
        .filter(|p| !local.gate.require.contains(p))
    {
        out.push(format!("gate.require without {p}"));
    }
    if local
        .agents
        .iter()
        .any(|(a, rules)| team.agents.get(a) != Some(rules))
    {
        out.push("agents granted locally".into());
    }
    out
}

/// The team's CAs for the project at `project` (`[trust] ca` of the layers), `None` when none
/// is set.
pub fn team_cas(project: &Path) -> Result<Option<crate::trust::TrustedCas>, ConfigError> {
    let config = load(&project.join(".attenu"))?;
    if config.trust.ca.is_empty() {
        return Ok(None);
    }
    let mut cas = crate::trust::TrustedCas::default();
    for line in &config.trust.ca {
        cas.add(line).map_err(|why| ConfigError::Layer {
            path: project.join(TEAM_FILE),
            why: LayerProblem::Ca {
                line: line.clone(),
                why,
            },
        })?;
    }
    Ok(Some(cas))
}
