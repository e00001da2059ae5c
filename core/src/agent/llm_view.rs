//! The model's view of the transcript ([`LlmView`]): the messages converted for the provider so
//! far and where the transcript's system messages stand among them, extended message by message
//! as the transcript grows.

use std::sync::Arc;

use crate::message::{AgentMessage, Message};

use super::{AgentHooks, PlacedSystemMessage};

/// A request's messages and its system messages placed among them.
pub(super) type Converted = (Arc<Vec<Message>>, Arc<Vec<PlacedSystemMessage>>);

/// The model's view of the first `converted` messages of the transcript, and where its system
/// messages stand in it. The transcript only grows between model calls (a replaced or cleared
/// one resets the view), so each request is the last one's list and the conversion of the
/// messages added since; a system message added is placed after what the messages before it
/// became, read off the list as it grows, so no prefix is converted again.
#[derive(Default)]
pub(super) struct LlmView {
    converted: usize,
    messages: Arc<Vec<Message>>,
    system: Arc<Vec<PlacedSystemMessage>>,
}

impl LlmView {
    /// The view of `context`, converting only what the view does not hold yet (hooks that
    /// convert each message alone). A conversion that throws leaves the view empty.
    pub(super) fn extended(
        &mut self,
        context: &[AgentMessage],
        hooks: &dyn AgentHooks,
    ) -> Result<Converted, String> {
        if self.converted > context.len() {
            *self = LlmView::default();
        }
        let extended = self.extend(context, hooks);
        if extended.is_err() {
            *self = LlmView::default();
        }
        extended?;
        self.converted = context.len();
        Ok((Arc::clone(&self.messages), Arc::clone(&self.system)))
    }

    fn extend(&mut self, context: &[AgentMessage], hooks: &dyn AgentHooks) -> Result<(), String> {
        let mut start = self.converted;
        for (index, message) in context.iter().enumerate().skip(start) {
            if let AgentMessage::System(system) = message {
                if start < index {
                    let added = hooks.convert_to_llm(&context[start..index])?;
                    Arc::make_mut(&mut self.messages).extend(added);
                    start = index;
                }
                Arc::make_mut(&mut self.system).push(PlacedSystemMessage {
                    at: self.messages.len(),
                    message: system.clone(),
                });
            }
        }
        let added = hooks.convert_to_llm(&context[start..])?;
        Arc::make_mut(&mut self.messages).extend(added);
        Ok(())
    }
}
