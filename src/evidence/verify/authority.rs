//! A node's authority (attenu-guard authority.py, profile -01): its scopes, its ceilings (one
//! per key) and its ttl; whether a child's is within its parent's (monotonicity), and whether
//! an action is within it (containment).

use super::ceiling::Ceiling;
use super::ceiling_wire::{ceiling_from_wire, ConstraintError};
use super::json::kind;
use super::scope::{scope_covers, valid_scope};
use super::shown::{shown_list, shown_str};
use super::{Obj, Value};

/// A node's authority: scopes, ceilings (one per key) and ttl (seconds, none = unbounded).
#[derive(Debug, Clone)]
pub(super) struct Authority {
    scopes: Vec<String>,
    ceilings: Vec<Ceiling>,
    ttl: Option<f64>,
}

/// Why an authority cannot be read (`member` is `authority` or `granted`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum AuthorityError {
    #[error("{member} is {kind}, not an object")]
    NotAnObject {
        member: &'static str,
        kind: &'static str,
    },
    #[error(
        "{member} carries members this verifier does not evaluate and will not ignore: {}",
        shown_list(.members.iter().map(String::as_str))
    )]
    UnreadMembers {
        member: &'static str,
        members: Vec<String>,
    },
    #[error("a scope is {0}, not a string")]
    ScopeNotAString(&'static str),
    #[error(
        "invalid scope {}: expected lowercase dot-separated segments, '*' only as the whole last one",
        shown_str(.0)
    )]
    InvalidScope(String),
    #[error("scopes is {0}, not an array")]
    ScopesNotAnArray(&'static str),
    #[error(transparent)]
    Constraint(#[from] ConstraintError),
    #[error("two constraints share the key {}; an authority holds one per key", shown_str(.0))]
    DuplicateKey(String),
    #[error("constraints is {0}, not an array")]
    ConstraintsNotAnArray(&'static str),
    #[error("ttl is not a finite number")]
    TtlNotFinite,
    #[error("ttl is {0}, not a number")]
    TtlNotANumber(&'static str),
}

/// The first dimension in which a child's authority is wider than its parent's.
#[derive(Debug, thiserror::Error)]
pub(super) enum Wider<'a> {
    #[error("child scopes {} not held by parent", shown_list(.0.iter().copied()))]
    Scopes(Vec<&'a str>),
    /// The parent's ceiling, which the child does not hold.
    #[error("ceiling {} unbounded, parent holds {}", shown_str(&.0.key), .0.describe())]
    CeilingUnbounded(&'a Ceiling),
    #[error("ceiling {} looser than parent {}", .child.describe(), .parent.describe())]
    CeilingLooser {
        child: &'a Ceiling,
        parent: &'a Ceiling,
    },
    #[error("ttl unbounded, parent {0}")]
    TtlUnbounded(f64),
    #[error("ttl {child} > parent {parent}")]
    TtlLonger { child: f64, parent: f64 },
}

/// Why an action is outside an authority.
#[derive(Debug, thiserror::Error)]
pub(super) enum Outside<'a> {
    #[error(
        "scope {} is not covered by {}",
        shown_str(.scope),
        shown_list(.held.iter().map(String::as_str))
    )]
    ScopeNotCovered { scope: String, held: &'a [String] },
    /// The context `field` holds `value` (as shown), which `ceiling` does not admit.
    #[error("context {} = {value} is outside {}", shown_str(.field), .ceiling.describe())]
    Bound {
        field: &'a str,
        value: String,
        ceiling: &'a Ceiling,
    },
    #[error(
        "the node holds a constraint this verifier does not define ({}), which denies every action",
        .0.describe()
    )]
    UnknownConstraint(&'a Ceiling),
    /// The allow's scope, as shown.
    #[error("the scope {0} is not a string")]
    ScopeNotAString(String),
    #[error("the context is {0}, not an object")]
    ContextNotAnObject(&'static str),
}

impl Authority {
    /// Reads an authority whole: a member this verifier does not evaluate is refused.
    pub(super) fn from_wire(
        v: Option<&Value>,
        member: &'static str,
    ) -> Result<Authority, AuthorityError> {
        let Some(Value::Object(m)) = v else {
            return Err(AuthorityError::NotAnObject {
                member,
                kind: kind(v),
            });
        };
        let unknown: Vec<String> = m
            .keys()
            .filter(|k| !matches!(*k, "scopes" | "constraints" | "ttl"))
            .map(str::to_string)
            .collect();
        if !unknown.is_empty() {
            return Err(AuthorityError::UnreadMembers {
                member,
                members: unknown,
            });
        }
        Ok(Authority {
            scopes: scopes_from_wire(m.get("scopes"))?,
            ceilings: ceilings_from_wire(m.get("constraints"))?,
            ttl: ttl_from_wire(m.get("ttl"))?,
        })
    }

    fn covers_scope(&self, requested: &str) -> bool {
        self.scopes.iter().any(|h| scope_covers(h, requested))
    }

    /// `Ok` when `self` is no more powerful than `parent` in any dimension; otherwise the first
    /// dimension that is wider, in the order scopes, ceilings (by key), ttl.
    pub(super) fn narrower_than<'a>(&'a self, parent: &'a Authority) -> Result<(), Wider<'a>> {
        let wider: Vec<&str> = self
            .scopes
            .iter()
            .map(String::as_str)
            .filter(|s| !parent.covers_scope(s))
            .collect();
        if !wider.is_empty() {
            return Err(Wider::Scopes(wider));
        }
        for pc in &parent.ceilings {
            match self.ceilings.iter().find(|c| c.key == pc.key) {
                None => return Err(Wider::CeilingUnbounded(pc)),
                Some(cc) if !pc.subsumes(cc) => {
                    return Err(Wider::CeilingLooser {
                        child: cc,
                        parent: pc,
                    })
                }
                Some(_) => {}
            }
        }
        if let Some(pt) = parent.ttl {
            match self.ttl {
                None => return Err(Wider::TtlUnbounded(pt)),
                Some(ct) if ct > pt => {
                    return Err(Wider::TtlLonger {
                        child: ct,
                        parent: pt,
                    })
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// `Ok` when an action on `scope` with context `ctx` is within this authority.
    pub(super) fn permits(&self, scope: &str, ctx: &Obj) -> Result<(), Outside<'_>> {
        if !self.covers_scope(scope) {
            return Err(Outside::ScopeNotCovered {
                scope: scope.to_string(),
                held: &self.scopes,
            });
        }
        for c in &self.ceilings {
            c.permits(scope, ctx)?;
        }
        Ok(())
    }
}

/// The elements of an optional array member (none when it is absent); any other kind of value
/// is the error `not_array` makes of its kind.
fn array_items<'v, 'a>(
    v: Option<&'v Value<'a>>,
    not_array: fn(&'static str) -> AuthorityError,
) -> Result<&'v [Value<'a>], AuthorityError> {
    match v {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        other => Err(not_array(kind(other))),
    }
}

/// The scopes, each valid and held once, sorted.
fn scopes_from_wire(v: Option<&Value>) -> Result<Vec<String>, AuthorityError> {
    let mut scopes: Vec<String> = Vec::new();
    for s in array_items(v, AuthorityError::ScopesNotAnArray)? {
        let s = s
            .as_str()
            .ok_or_else(|| AuthorityError::ScopeNotAString(kind(Some(s))))?;
        if !valid_scope(s) {
            return Err(AuthorityError::InvalidScope(s.to_string()));
        }
        if !scopes.iter().any(|x| x == s) {
            scopes.push(s.to_string());
        }
    }
    scopes.sort();
    Ok(scopes)
}

/// The ceilings, one per key, sorted by key.
fn ceilings_from_wire(v: Option<&Value>) -> Result<Vec<Ceiling>, AuthorityError> {
    let mut ceilings: Vec<Ceiling> = Vec::new();
    for c in array_items(v, AuthorityError::ConstraintsNotAnArray)? {
        let c = ceiling_from_wire(c)?;
        if ceilings.iter().any(|x| x.key == c.key) {
            return Err(AuthorityError::DuplicateKey(c.key));
        }
        ceilings.push(c);
    }
    ceilings.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(ceilings)
}

fn ttl_from_wire(v: Option<&Value>) -> Result<Option<f64>, AuthorityError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(Some(
            n.as_f64()
                .filter(|f| f.is_finite())
                .ok_or(AuthorityError::TtlNotFinite)?,
        )),
        other => Err(AuthorityError::TtlNotANumber(kind(other))),
    }
}
