//! Aborted answers: what a provider had sent when the caller cut the stream. An aborted answer
//! (`stopReason: "aborted"`) is not something a stream says; it is what the decoder, told of
//! the abort, makes of the reads that had arrived. Its synthesis is therefore a cut: the
//! stream of the answer it would have become, up to the read after which an abort gives it.

use pi_core::agent::StreamEvent;
use pi_core::message::{AssistantMessage, ContentBlock, StopReason};
use pi_core::model::Model;

use super::{final_message, synthesize_nearest, SynthesizedResponse, Unrepresentable};
use crate::call::ModelCall;
use crate::StreamEnd;

/// The reads `model`'s provider had sent when the caller aborted `message`: the fewest reads
/// of the whole answer's stream after which the decoder, told of the abort, gives `message`.
pub fn synthesize_aborted(
    model: &Model,
    message: &AssistantMessage,
) -> Result<SynthesizedResponse, Unrepresentable> {
    if message.stop_reason != StopReason::Aborted {
        return Err(Unrepresentable::new(
            &model.api,
            "the answer was not aborted",
        ));
    }
    let mut whole = message.clone();
    let calls_tools = whole
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::ToolCall(_)));
    whole.stop_reason = match calls_tools {
        true => StopReason::ToolUse,
        false => StopReason::Stop,
    };
    whole.error_message = None;
    let (response, _) = synthesize_nearest(model, &whole)?;
    (0..=response.chunks.len())
        .map(|reads| SynthesizedResponse {
            chunks: response.chunks[..reads].to_vec(),
            ..response.clone()
        })
        .find(|cut| {
            let (mut events, on_abort) = abort_events(model, message.timestamp, cut);
            events.extend(on_abort);
            final_message(&events).as_ref() == Some(message)
        })
        .ok_or_else(|| {
            Unrepresentable::new(
                &model.api,
                "no cut of its stream is read as this aborted answer",
            )
        })
}

/// The events `model`'s decoder makes of a response cut short (`response`, its reads so far)
/// to a request made at `timestamp`: those of its reads, then those of the abort.
pub fn abort_events(
    model: &Model,
    timestamp: u64,
    response: &SynthesizedResponse,
) -> (Vec<StreamEvent>, Vec<StreamEvent>) {
    let mut decoder = ModelCall::decoder_for(model, timestamp);
    let mut events = decoder.start();
    for chunk in &response.chunks {
        events.extend(decoder.feed(chunk));
    }
    (events, decoder.finish(StreamEnd::Aborted))
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use crate::catalog::builtin;

    #[test]
    fn an_aborted_answer_is_the_cut_its_decoder_reads_it_from() {
        let model = builtin()
            .get_model("deepseek", "deepseek-v4-pro")
            .expect("a built-in model");
        let whole = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            timestamp: 1_700_000_000_000,
            content: vec![ContentBlock::text("Hello there, and more.")],
            stop_reason: StopReason::Stop,
            raw_stop_reason: Some("stop".into()),
            ..AssistantMessage::default()
        };
        let response = super::super::synthesize(model, &whole).expect("expressible");
        for reads in 0..response.chunks.len() {
            let cut = SynthesizedResponse {
                chunks: response.chunks[..reads].to_vec(),
                ..response.clone()
            };
            let (mut events, on_abort) = abort_events(model, whole.timestamp, &cut);
            events.extend(on_abort);
            let aborted = final_message(&events).expect("an end");
            assert_eq!(aborted.stop_reason, StopReason::Aborted);
            let again = synthesize_aborted(model, &aborted).expect("a cut says it");
            let (mut events, on_abort) = abort_events(model, whole.timestamp, &again);
            events.extend(on_abort);
            assert_eq!(final_message(&events), Some(aborted), "after {reads} reads");
        }
        assert!(synthesize_aborted(model, &whole).is_err());
    }
}
