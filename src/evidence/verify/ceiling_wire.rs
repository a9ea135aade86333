//! Reading a constraint from its wire form into a [`Ceiling`]. A constraint is read whole: a
//! member this verifier does not evaluate is refused, never ignored.

use super::ceiling::{contains, Bound, Ceiling, CeilingKind, Member};
use super::json::kind;
use super::scope::valid_scope;
use super::shown::{shown_list, shown_opt, shown_str};
use super::{Obj, Value};
use crate::json::canonical;
use crate::ledger::fields::EGRESS_ORDER;
use serde_json::Number;

/// Why a constraint cannot be read. The texts name the constraint by its key, as shown.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum ConstraintError {
    #[error("a constraint is {0}, not an object")]
    NotAnObject(&'static str),
    /// The key's JSON kind, or `absent`.
    #[error("key of a constraint is {0}, not a string")]
    KeyNotAString(&'static str),
    #[error("type of constraint {} is {kind}, not a string", shown_str(.key))]
    TypeNotAString { key: String, kind: &'static str },
    #[error("max of constraint {} is {kind}, not a number", shown_str(.key))]
    MaxNotANumber { key: String, kind: &'static str },
    #[error("max of constraint {} is not a finite number", shown_str(.key))]
    MaxNotFinite { key: String },
    #[error("max of constraint {} exceeds the safe integer range ±(2^53 - 1)", shown_str(.key))]
    MaxNotSafe { key: String },
    #[error("{member} of constraint {} is {kind}, not a string", shown_str(.key))]
    NotAString {
        key: String,
        member: &'static str,
        kind: &'static str,
    },
    #[error("{list} of constraint {} is {kind}, not an array", shown_str(.key))]
    ListNotAnArray {
        key: String,
        list: &'static str,
        kind: &'static str,
    },
    #[error("{list} of constraint {} holds {kind}, which is no member", shown_str(.key))]
    NotAMember {
        key: String,
        list: &'static str,
        kind: &'static str,
    },
    #[error("applies_to of constraint \"max_calls\" is {}, not a scope", shown_str(.0))]
    AppliesToNotAScope(String),
    /// The rank as shown.
    #[error("rank of constraint \"egress\" is {0}, not 'none', 'internal' or 'any'")]
    BadRank(String),
    #[error(
        "constraint names dimension {} but is read as {}; refusing rather than bounding another dimension",
        shown_str(.key),
        shown_str(.read_as)
    )]
    OtherDimension { key: String, read_as: String },
    #[error(
        "constraint {} carries members this verifier does not evaluate and will not ignore: {}",
        shown_str(.key),
        shown_list(.members.iter().map(String::as_str))
    )]
    UnreadMembers { key: String, members: Vec<String> },
}

use ConstraintError as E;

/// A constraint read whole: a member this verifier does not evaluate is refused, never ignored.
pub(super) fn ceiling_from_wire(c: &Value) -> Result<Ceiling, ConstraintError> {
    let m = c.as_object().ok_or_else(|| E::NotAnObject(kind(Some(c))))?;
    let key = match m.get("key") {
        Some(Value::String(s)) => s.to_string(),
        None => return Err(E::KeyNotAString("absent")),
        other => return Err(E::KeyNotAString(kind(other))),
    };
    let discriminator = match m.get("type") {
        None => key.as_str(),
        Some(Value::String(t)) => t.as_ref(),
        other => {
            return Err(E::TypeNotAString {
                key: key.clone(),
                kind: kind(other),
            })
        }
    };
    let read = match discriminator {
        "max_rows" | "max_spend" => max_rows_or_spend(discriminator, m)?,
        "max_calls" => max_calls(m)?,
        "egress" => egress(m)?,
        "allow" | "deny" => list(discriminator, &key, m)?,
        "prefix" => prefix(&key, m)?,
        _ => Read {
            ceiling: Ceiling {
                key: key.clone(),
                kind: CeilingKind::Unknown,
                field: None,
                bound: Bound::Unknown(c.to_value()),
            },
            members: m.keys().collect(),
            emitted_key: key.clone(),
            has_field: false,
        },
    };
    read.whole(key, m)
}

/// A ceiling as read, with what its wire form carries.
struct Read<'m> {
    ceiling: Ceiling,
    /// The members its wire form carries.
    members: Vec<&'m str>,
    /// The key its wire form carries.
    emitted_key: String,
    /// It reads `field`.
    has_field: bool,
}

impl Read<'_> {
    /// The ceiling, when its wire form is exactly what `m` says: the same key, and no member
    /// left over (a null `field` reads as absent).
    fn whole(self, key: String, m: &Obj) -> Result<Ceiling, ConstraintError> {
        if self.emitted_key != key {
            return Err(E::OtherDimension {
                key,
                read_as: self.emitted_key,
            });
        }
        let dropped: Vec<String> = m
            .iter()
            .filter(|(k, v)| {
                !self.members.iter().any(|x| x == k)
                    && !(*k == "field" && (self.has_field || v.is_null()))
            })
            .map(|(k, _)| k.to_string())
            .collect();
        if !dropped.is_empty() {
            return Err(E::UnreadMembers {
                key,
                members: dropped,
            });
        }
        Ok(self.ceiling)
    }
}

fn max_rows_or_spend(discriminator: &str, m: &Obj) -> Result<Read<'static>, ConstraintError> {
    let (k, kind_, ctx) = if discriminator == "max_rows" {
        ("max_rows", CeilingKind::Rows, "rows")
    } else {
        ("max_spend", CeilingKind::Spend, "spend")
    };
    let max = check_max(k, m.get("max"))?;
    let bound = Bound::Max {
        max,
        ctx_field: ctx.into(),
        applies_to: None,
    };
    Ok(Read {
        ceiling: Ceiling {
            key: k.into(),
            kind: kind_,
            field: None,
            bound,
        },
        members: vec!["key", "max"],
        emitted_key: k.into(),
        has_field: false,
    })
}

/// `max_calls`, for every scope or (`applies_to`) for the scopes one pattern covers.
fn max_calls(m: &Obj) -> Result<Read<'static>, ConstraintError> {
    let applies_to = optional_string("max_calls", "applies_to", m.get("applies_to"))?;
    if let Some(a) = &applies_to {
        if !valid_scope(a) {
            return Err(E::AppliesToNotAScope(a.clone()));
        }
    }
    let (k, ctx, members) = match &applies_to {
        Some(a) => (
            format!("max_calls[{a}]"),
            format!("calls[{a}]"),
            vec!["key", "type", "max", "applies_to"],
        ),
        None => (
            "max_calls".to_string(),
            "calls".to_string(),
            vec!["key", "max"],
        ),
    };
    let max = check_max(&k, m.get("max"))?;
    let bound = Bound::Max {
        max,
        ctx_field: ctx,
        applies_to,
    };
    Ok(Read {
        ceiling: Ceiling {
            key: k.clone(),
            kind: CeilingKind::Calls,
            field: None,
            bound,
        },
        members,
        emitted_key: k,
        has_field: false,
    })
}

fn egress(m: &Obj) -> Result<Read<'static>, ConstraintError> {
    let rank = match m.get("rank") {
        Some(Value::String(s)) => EGRESS_ORDER.iter().position(|x| x == s),
        _ => None,
    }
    .ok_or_else(|| E::BadRank(shown_opt(m.get("rank"))))?;
    let c = Ceiling {
        key: "egress".into(),
        kind: CeilingKind::Egress,
        field: None,
        bound: Bound::Rank(rank),
    };
    Ok(Read {
        ceiling: c,
        members: vec!["key", "rank"],
        emitted_key: "egress".into(),
        has_field: false,
    })
}

/// `allow` (`one_of`) and `deny` (`not_one_of`).
fn list(discriminator: &str, key: &str, m: &Obj) -> Result<Read<'static>, ConstraintError> {
    let (list, kind_) = if discriminator == "allow" {
        ("one_of", CeilingKind::Allow)
    } else {
        ("not_one_of", CeilingKind::Deny)
    };
    let members = members_of(key, list, m.get(list))?;
    let field = optional_string(key, "field", m.get("field"))?;
    let c = Ceiling {
        key: key.to_string(),
        kind: kind_,
        field,
        bound: Bound::Members(members),
    };
    Ok(Read {
        ceiling: c,
        members: vec!["key", "type", list],
        emitted_key: key.to_string(),
        has_field: true,
    })
}

fn prefix(key: &str, m: &Obj) -> Result<Read<'static>, ConstraintError> {
    let prefix = match m.get("prefix") {
        Some(Value::String(p)) => p.to_string(),
        other => {
            return Err(E::NotAString {
                key: key.to_string(),
                member: "prefix",
                kind: kind_or_absent(other),
            })
        }
    };
    let field = optional_string(key, "field", m.get("field"))?;
    let c = Ceiling {
        key: key.to_string(),
        kind: CeilingKind::Prefix,
        field,
        bound: Bound::Prefix(prefix),
    };
    Ok(Read {
        ceiling: c,
        members: vec!["key", "type", "prefix"],
        emitted_key: key.to_string(),
        has_field: true,
    })
}

/// A member's JSON kind, or `absent` when it is not there at all.
fn kind_or_absent(v: Option<&Value>) -> &'static str {
    if v.is_none() {
        "absent"
    } else {
        kind(v)
    }
}

fn check_max(key: &str, v: Option<&Value>) -> Result<f64, ConstraintError> {
    let Some(Value::Number(n)) = v else {
        return Err(E::MaxNotANumber {
            key: key.to_string(),
            kind: kind_or_absent(v),
        });
    };
    let f = n.as_f64().ok_or_else(|| E::MaxNotFinite {
        key: key.to_string(),
    })?;
    let integral = n.is_i64() || n.is_u64() || f.fract() == 0.0;
    if integral && (integral_abs_exceeds_safe(n) || f.abs() > canonical::MAX_SAFE_INTEGER as f64) {
        return Err(E::MaxNotSafe {
            key: key.to_string(),
        });
    }
    Ok(f)
}

fn integral_abs_exceeds_safe(n: &Number) -> bool {
    match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => i.unsigned_abs() > canonical::MAX_SAFE_INTEGER,
        (None, Some(_)) => true,
        _ => false,
    }
}

fn optional_string(
    key: &str,
    member: &'static str,
    v: Option<&Value>,
) -> Result<Option<String>, ConstraintError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.to_string())),
        Some(other) => Err(E::NotAString {
            key: key.to_string(),
            member,
            kind: kind(Some(other)),
        }),
    }
}

/// An allow- or deny-list, each member once.
fn members_of(
    key: &str,
    list: &'static str,
    v: Option<&Value>,
) -> Result<Vec<Member>, ConstraintError> {
    let Some(Value::Array(items)) = v else {
        return Err(E::ListNotAnArray {
            key: key.to_string(),
            list,
            kind: kind_or_absent(v),
        });
    };
    let mut out: Vec<Member> = Vec::new();
    for item in items {
        let m = Member::of(item).ok_or_else(|| E::NotAMember {
            key: key.to_string(),
            list,
            kind: kind(Some(item)),
        })?;
        if !contains(&out, &m) {
            out.push(m);
        }
    }
    Ok(out)
}
