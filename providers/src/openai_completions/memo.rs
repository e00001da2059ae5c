//! The message elements built for the last request on this thread, handed out again for the
//! messages the next request repeats. Each element is a function of the model, its compat flags
//! and one (transformed) message only, so a message found equal to the one at the same place
//! last time, for an equal model and compat, has the element built then: the same value, and
//! shared (see [`crate::RequestBody`]). Nothing else is remembered; a request that differs
//! anywhere simply builds what differs.

use std::cell::RefCell;
use std::sync::Arc;

use pi_core::message::Message;
use pi_core::model::Model;
use serde_json::Value;

use super::compat::Compat;

/// One message of the last request and the element built for it (`None`: it had none).
type Entry = (Message, Option<Arc<Value>>);

#[derive(Default)]
struct Memo {
    context: Option<(Model, Compat)>,
    entries: Vec<Entry>,
}

thread_local! {
    static LAST: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The elements of one request being built, message by message, in order: the last request's
/// entries, updated in place.
pub(super) struct Elements {
    entries: Vec<Entry>,
    next: usize,
}

impl Elements {
    /// The element of `message` (the next message of the request): the one built last time
    /// for an equal message at this place, or what `build` makes of it.
    pub(super) fn of(
        &mut self,
        message: &Message,
        build: impl FnOnce() -> Option<Value>,
    ) -> Option<Arc<Value>> {
        let at = self.next;
        self.next += 1;
        match self.entries.get_mut(at) {
            Some(entry) if entry.0 == *message => entry.1.clone(),
            Some(entry) => {
                *entry = (message.clone(), build().map(Arc::new));
                entry.1.clone()
            }
            None => {
                let element = build().map(Arc::new);
                self.entries.push((message.clone(), element.clone()));
                element
            }
        }
    }
}

/// Runs `build` with this thread's elements of the last request for `model` and `compat`, and
/// keeps the elements it asked for as the last request's.
pub(super) fn with_elements<R>(
    model: &Model,
    compat: &Compat,
    build: impl FnOnce(&mut Elements) -> R,
) -> R {
    let entries = LAST.with_borrow_mut(|memo| {
        let same = memo
            .context
            .as_ref()
            .is_some_and(|(m, c)| m == model && c == compat);
        if !same {
            memo.context = Some((model.clone(), compat.clone()));
            memo.entries.clear();
        }
        std::mem::take(&mut memo.entries)
    });
    let mut elements = Elements { entries, next: 0 };
    let built = build(&mut elements);
    elements.entries.truncate(elements.next);
    LAST.with_borrow_mut(|memo| memo.entries = elements.entries);
    built
}
