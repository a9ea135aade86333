//! One ledger entry as the commands read it: a borrowed view of its JSON with the event as an
//! enum and typed accessors for the members code reads, so no command spells a field name.

use crate::json::tree::Json;
use crate::ledger::fields::{context, event, field};
use serde_json::Value;

/// What an entry records ([`crate::ledger::fields::LEDGER_EVENTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    Root,
    Spawn,
    SpawnDenied,
    Allow,
    Deny,
    Kill,
    Done,
    Outcome,
}

impl Event {
    /// The event a ledger's `event` member names; `None` for any other text.
    pub fn parse(name: &str) -> Option<Event> {
        Some(match name {
            event::ROOT => Event::Root,
            event::SPAWN => Event::Spawn,
            event::SPAWN_DENIED => Event::SpawnDenied,
            event::ALLOW => Event::Allow,
            event::DENY => Event::Deny,
            event::KILL => Event::Kill,
            event::DONE => Event::Done,
            event::OUTCOME => Event::Outcome,
            _ => return None,
        })
    }

    /// The name the ledger writes.
    pub fn name(self) -> &'static str {
        match self {
            Event::Root => event::ROOT,
            Event::Spawn => event::SPAWN,
            Event::SpawnDenied => event::SPAWN_DENIED,
            Event::Allow => event::ALLOW,
            Event::Deny => event::DENY,
            Event::Kill => event::KILL,
            Event::Done => event::DONE,
            Event::Outcome => event::OUTCOME,
        }
    }
}

/// A JSON tree an [`EntryView`] can read: a parsed `serde_json::Value`, or the JSON layer's
/// borrowed [`Json`] (what a reader that streams a ledger parses a line into), read alike.
pub trait Tree {
    /// A member of an object (`None` for anything else).
    fn member(&self, name: &str) -> Option<&Self>;
    /// The first element of an array, or the member named `0` of an object (as the JSON
    /// pointer `/0` reads).
    fn first(&self) -> Option<&Self>;
    fn as_text(&self) -> Option<&str>;
    fn as_count(&self) -> Option<u64>;
    /// The same value as a `serde_json::Value`.
    fn owned(&self) -> Value;
}

impl Tree for Value {
    fn member(&self, name: &str) -> Option<&Self> {
        self.get(name)
    }
    fn first(&self) -> Option<&Self> {
        self.pointer("/0")
    }
    fn as_text(&self) -> Option<&str> {
        self.as_str()
    }
    fn as_count(&self) -> Option<u64> {
        self.as_u64()
    }
    fn owned(&self) -> Value {
        self.clone()
    }
}

impl Tree for Json<'_> {
    fn member(&self, name: &str) -> Option<&Self> {
        self.as_object()?.get(name)
    }
    fn first(&self) -> Option<&Self> {
        match self {
            Json::Array(items) => items.first(),
            Json::Object(m) => m.get("0"),
            _ => None,
        }
    }
    fn as_text(&self) -> Option<&str> {
        self.as_str()
    }
    fn as_count(&self) -> Option<u64> {
        self.as_u64()
    }
    fn owned(&self) -> Value {
        self.to_value()
    }
}

/// One entry, borrowed: whatever the line holds (a line that is not an entry answers `None`
/// to every accessor, as indexing a `Value` would).
#[derive(Debug)]
pub struct EntryView<'a, T = Value>(&'a T);

impl<T> Clone for EntryView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for EntryView<'_, T> {}

impl<'a, T: Tree> EntryView<'a, T> {
    pub fn of(value: &'a T) -> Self {
        EntryView(value)
    }

    /// The entry as parsed.
    pub fn value(self) -> &'a T {
        self.0
    }

    /// A top-level member.
    pub fn get(self, name: &str) -> Option<&'a T> {
        self.0.member(name)
    }

    /// A top-level member that is a string.
    pub fn str(self, name: &str) -> Option<&'a str> {
        self.get(name).and_then(T::as_text)
    }

    /// The event, when it is one of the ledger's.
    pub fn event(self) -> Option<Event> {
        self.event_name().and_then(Event::parse)
    }

    /// The `event` member as written.
    pub fn event_name(self) -> Option<&'a str> {
        self.str(field::EVENT)
    }

    pub fn is(self, event: Event) -> bool {
        self.event() == Some(event)
    }

    pub fn seq(self) -> Option<u64> {
        self.get(field::SEQ).and_then(T::as_count)
    }

    pub fn ts(self) -> Option<u64> {
        self.get(field::TS).and_then(T::as_count)
    }

    pub fn chain_id(self) -> Option<&'a str> {
        self.str(field::CHAIN_ID)
    }

    pub fn node(self) -> Option<&'a str> {
        self.str(field::NODE)
    }

    pub fn agent(self) -> Option<&'a str> {
        self.str(field::AGENT)
    }

    pub fn tool(self) -> Option<&'a str> {
        self.str(field::TOOL)
    }

    pub fn scope(self) -> Option<&'a str> {
        self.str(field::SCOPE)
    }

    pub fn call_id(self) -> Option<&'a str> {
        self.str(field::CALL_ID)
    }

    pub fn hash(self) -> Option<&'a str> {
        self.str(field::HASH)
    }

    pub fn prev_hash(self) -> Option<&'a str> {
        self.str(field::PREV_HASH)
    }

    /// An outcome's `body_state`.
    pub fn body_state(self) -> Option<&'a str> {
        self.str(field::BODY_STATE)
    }

    /// An allow's `policy` (present when a refusal was not enforced).
    pub fn policy(self) -> Option<&'a T> {
        self.get(field::POLICY)
    }

    /// The message of the entry's first reason.
    pub fn first_reason_message(self) -> Option<&'a str> {
        self.get(field::REASONS)?
            .first()?
            .member("message")
            .and_then(T::as_text)
    }

    /// The `context` object.
    pub fn context(self) -> Option<&'a T> {
        self.get(field::CONTEXT)
    }

    /// A member of `context`.
    pub fn context_get(self, name: &str) -> Option<&'a T> {
        self.context()?.member(name)
    }

    /// A member of `context` that is a string.
    pub fn context_str(self, name: &str) -> Option<&'a str> {
        self.context_get(name).and_then(T::as_text)
    }

    /// `context.session_id`.
    pub fn session_id(self) -> Option<&'a str> {
        self.context_str(context::SESSION_ID)
    }

    /// `context.tool_use_id`.
    pub fn tool_use_id(self) -> Option<&'a str> {
        self.context_str(context::TOOL_USE_ID)
    }

    /// `context.previous_chain` (a root's link to the chain before it; `null` on the first).
    pub fn previous_chain(self) -> Option<&'a T> {
        self.context_get(context::PREVIOUS_CHAIN)
    }

    /// `context.identity` (a root's signer and repository).
    pub fn identity(self) -> Option<&'a T> {
        self.context_get(context::IDENTITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::fields::LEDGER_EVENTS;
    use serde_json::json;

    #[test]
    fn every_event_name_parses_to_its_variant_and_back() {
        for name in LEDGER_EVENTS {
            let e = Event::parse(name).expect(name);
            assert_eq!(e.name(), *name);
        }
        assert_eq!(Event::parse("Allow"), None);
    }

    #[test]
    fn the_view_reads_the_members_it_names() {
        let v = json!({"event": "allow", "seq": 3, "node": "n", "tool": "Bash", "call_id": "c",
            "context": {"session_id": "s", "tool_use_id": "t"}});
        let e = EntryView::of(&v);
        assert!(e.is(Event::Allow));
        assert_eq!(
            (e.seq(), e.node(), e.tool(), e.call_id()),
            (Some(3), Some("n"), Some("Bash"), Some("c"))
        );
        assert_eq!((e.session_id(), e.tool_use_id()), (Some("s"), Some("t")));
        let not_an_entry = json!([1]);
        assert_eq!(EntryView::of(&not_an_entry).event(), None);
    }
}
