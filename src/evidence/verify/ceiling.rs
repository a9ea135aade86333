//! Typed ceilings (attenu-guard ceilings.py, profile -01): what each bounds, how a parent's
//! ceiling subsumes a child's, and whether an action's context is within one. Reading one from
//! its wire form is [`super::ceiling_wire`].

use super::authority::Outside;
use super::json::{get, num_eq, num_f64};
use super::scope::scope_covers;
use super::shown::{escaped, shown, shown_str, shown_str_escaped};
use super::{Json, Obj, Value};
use crate::json::canonical;
use crate::ledger::fields::EGRESS_ORDER;
use serde_json::Number;

/// A member of an allow- or deny-list: its JSON type and value (`1` is `1.0`, never `true`).
#[derive(Debug, Clone)]
pub(super) enum Member {
    Null,
    Bool(bool),
    Str(String),
    Num(Number),
}

impl Member {
    pub(super) fn of(v: &Value) -> Option<Member> {
        match v {
            Value::Null => Some(Member::Null),
            Value::Bool(b) => Some(Member::Bool(*b)),
            Value::String(s) => Some(Member::Str(s.to_string())),
            Value::Number(n) => Some(Member::Num(n.clone())),
            _ => None,
        }
    }
    fn same(&self, other: &Member) -> bool {
        match (self, other) {
            (Member::Null, Member::Null) => true,
            (Member::Bool(a), Member::Bool(b)) => a == b,
            (Member::Str(a), Member::Str(b)) => a == b,
            (Member::Num(a), Member::Num(b)) => num_eq(a, b),
            _ => false,
        }
    }
}

pub(super) fn contains(members: &[Member], m: &Member) -> bool {
    members.iter().any(|x| x.same(m))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CeilingKind {
    Rows,
    Spend,
    Calls,
    Egress,
    Allow,
    Deny,
    Prefix,
    Unknown,
}

#[derive(Debug, Clone)]
pub(super) enum Bound {
    /// `max_rows`, `max_spend`, `max_calls`: the context field must be a number ≤ max.
    Max {
        max: f64,
        ctx_field: String,
        applies_to: Option<String>,
    },
    /// `egress`: none < internal < any.
    Rank(usize),
    /// `allow` (one_of) and `deny` (not_one_of).
    Members(Vec<Member>),
    Prefix(String),
    /// A constraint type this verifier does not define: denies every action (fail closed).
    Unknown(serde_json::Value),
}

#[derive(Debug, Clone)]
pub(super) struct Ceiling {
    pub(super) key: String,
    pub(super) kind: CeilingKind,
    /// The context field an allow/deny/prefix ceiling reads, when it is not `key`.
    pub(super) field: Option<String>,
    pub(super) bound: Bound,
}

impl Ceiling {
    pub(super) fn field_name(&self) -> &str {
        self.field.as_deref().unwrap_or(&self.key)
    }

    pub(super) fn describe(&self) -> String {
        match &self.bound {
            Bound::Max { max, .. } => format!("{}<={}", shown_str(&self.key), max),
            Bound::Rank(r) => format!("{}<={}", shown_str(&self.key), EGRESS_ORDER[*r]),
            Bound::Members(m) => {
                let list: Vec<String> = m
                    .iter()
                    .map(|x| match x {
                        Member::Null => "null".to_string(),
                        Member::Bool(b) => b.to_string(),
                        Member::Str(s) => shown_str_escaped(s),
                        Member::Num(n) => n.to_string(),
                    })
                    .collect();
                let op = if self.kind == CeilingKind::Allow {
                    "in"
                } else {
                    "not in"
                };
                format!(
                    "{} {op} [{}]",
                    shown_str(self.field_name()),
                    list.join(", ")
                )
            }
            Bound::Prefix(p) => format!(
                "{} startswith {}",
                shown_str(self.field_name()),
                shown_str(p)
            ),
            Bound::Unknown(raw) => {
                format!("unknown constraint {}", escaped(&Json::from_value(raw)))
            }
        }
    }

    /// Does `self` (the parent's ceiling) admit everything `child` admits?
    pub(super) fn subsumes(&self, child: &Ceiling) -> bool {
        if self.kind != child.kind {
            return false;
        }
        match (&self.bound, &child.bound) {
            (Bound::Max { max: p, .. }, Bound::Max { max: c, .. }) => p >= c,
            (Bound::Rank(p), Bound::Rank(c)) => p >= c,
            // Stricter than the reference: the child must bound the same context field.
            (Bound::Members(p), Bound::Members(c)) if self.field_name() == child.field_name() => {
                match self.kind {
                    CeilingKind::Allow => c.iter().all(|m| contains(p, m)),
                    _ => p.iter().all(|m| contains(c, m)),
                }
            }
            (Bound::Prefix(p), Bound::Prefix(c)) if self.field_name() == child.field_name() => {
                c.starts_with(p.as_str())
            }
            (Bound::Unknown(p), Bound::Unknown(c)) => {
                match (canonical::to_vec(p), canonical::to_vec(c)) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Does this ceiling admit an action on `scope` with context `ctx`? A context without the
    /// field it bounds is within it; an unknown constraint admits nothing.
    pub(super) fn permits(&self, scope: &str, ctx: &Obj) -> Result<(), Outside<'_>> {
        let field = match &self.bound {
            Bound::Unknown(_) => return Err(Outside::UnknownConstraint(self)),
            Bound::Max {
                ctx_field,
                applies_to,
                ..
            } => {
                if let Some(pattern) = applies_to {
                    if !scope_covers(pattern, scope) {
                        return Ok(());
                    }
                }
                ctx_field.as_str()
            }
            Bound::Rank(_) => self.key.as_str(),
            Bound::Members(_) | Bound::Prefix(_) => self.field_name(),
        };
        // `_scope` is reserved: it is always the scope being checked, whatever the context says.
        let scope_value = Value::String(scope.into());
        let val = if field == "_scope" {
            Some(&scope_value)
        } else {
            get(ctx, field)
        };
        match val {
            Some(val) if !self.admits(val) => Err(Outside::Bound {
                field,
                value: shown(val),
                ceiling: self,
            }),
            _ => Ok(()),
        }
    }

    /// Is a context value, present, within this ceiling?
    fn admits(&self, val: &Value) -> bool {
        match &self.bound {
            Bound::Max { max, .. } => num_f64(Some(val)).is_some_and(|n| n <= *max),
            Bound::Rank(level) => val.as_str().is_some_and(|s| {
                EGRESS_ORDER
                    .iter()
                    .position(|x| *x == s)
                    .unwrap_or(EGRESS_ORDER.len())
                    <= *level
            }),
            Bound::Members(members) => {
                let scalar = matches!(val, Value::String(_) | Value::Number(_) | Value::Bool(_));
                let inside = Member::of(val).is_some_and(|m| contains(members, &m));
                scalar
                    && if self.kind == CeilingKind::Allow {
                        inside
                    } else {
                        !inside
                    }
            }
            Bound::Prefix(prefix) => val.as_str().is_some_and(|s| s.starts_with(prefix.as_str())),
            Bound::Unknown(_) => false,
        }
    }
}
