//! What bounds a long turn besides the model stopping: an optional step limit
//! (`[turns] max_steps`) and loop detection.
//!
//! A turn has no fixed number of round trips. A model that keeps making the same calls
//! with the same arguments and getting the same results is looping: after
//! [`LOOP_NOTE_ROUNDS`] such rounds in a row it is told so, and after
//! [`LOOP_END_ROUNDS`] the turn ends (`loop_detected`). Either stop ends the run
//! `failed` with `execution_failed`, one of the closed outcomes and codes, and says why
//! in a `diagnostic` of its own.

use magi_protocol::limits::{LOOP_END_ROUNDS, LOOP_NOTE_ROUNDS};
use magi_protocol::messages::{DIAGNOSTIC_LOOP_DETECTED, DIAGNOSTIC_STEP_LIMIT};
use magi_provider::Item;

/// What the model is told when it repeats itself.
pub(super) const LOOP_NOTE: &str = "Note: your last rounds made the same tool calls with \
    the same arguments and got the same results. Repeating them will not change the \
    result: try something else, or answer with what you have. If the same calls come \
    again, the turn ends.";

/// Why a turn stops before the model does: a diagnostic code and its summary.
pub(super) struct Stop {
    pub(super) code: &'static str,
    pub(super) summary: String,
}

/// What a round's repetition of the ones before it calls for.
pub(super) enum Repeats {
    /// Nothing: it is not (yet) a loop.
    None,
    /// The model is told [`LOOP_NOTE`] before its next request.
    Note,
    /// The turn ends.
    Stop(Stop),
}

/// One call of a round as loop detection compares it: the tool's name, the arguments
/// and the result the model was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RoundCall {
    name: String,
    arguments: String,
    result: String,
}

/// The turn's count of round trips and its watch for repeated rounds.
pub(super) struct Steps {
    max: Option<usize>,
    taken: usize,
    /// The calls and results of the last round with calls, and how many rounds in a
    /// row had exactly them.
    last: Vec<RoundCall>,
    repeats: usize,
}

impl Steps {
    /// The steps of a turn bounded by `max` round trips, if any.
    pub(super) fn new(max: Option<usize>) -> Steps {
        Steps {
            max,
            taken: 0,
            last: Vec::new(),
            repeats: 0,
        }
    }

    /// Before a round trip: the stop, when the turn took its `max_steps` already.
    pub(super) fn before_round(&mut self) -> Option<Stop> {
        if let Some(max) = self.max
            && self.taken >= max
        {
            return Some(Stop {
                code: DIAGNOSTIC_STEP_LIMIT,
                summary: format!(
                    "The turn reached its limit of {max} model round trips ([turns] max_steps)."
                ),
            });
        }
        self.taken += 1;
        None
    }

    /// After a round trip whose calls were `calls`: whether it repeats the rounds
    /// before it.
    pub(super) fn after_round(&mut self, calls: Vec<RoundCall>) -> Repeats {
        if calls.is_empty() {
            return Repeats::None;
        }
        if calls == self.last {
            self.repeats += 1;
        } else {
            self.last = calls;
            self.repeats = 1;
        }
        if self.repeats >= LOOP_END_ROUNDS {
            return Repeats::Stop(Stop {
                code: DIAGNOSTIC_LOOP_DETECTED,
                summary: format!(
                    "The model made the same tool calls with the same arguments and results \
                     {} rounds in a row; the turn was stopped.",
                    self.repeats
                ),
            });
        }
        if self.repeats == LOOP_NOTE_ROUNDS {
            return Repeats::Note;
        }
        Repeats::None
    }
}

/// Each call of a round (the items it added to the conversation) with its arguments
/// and result, in the order of the calls. A result finds its call by ID, wherever the
/// conversation puts it.
pub(super) fn round_calls(round: &[Item]) -> Vec<RoundCall> {
    let mut calls: Vec<(&str, RoundCall)> = Vec::new();
    for item in round {
        match item {
            Item::ToolCall {
                call_id,
                name,
                arguments,
            } => calls.push((
                call_id,
                RoundCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                    result: String::new(),
                },
            )),
            Item::ToolResult {
                call_id, output, ..
            } => {
                if let Some((_, call)) = calls.iter_mut().find(|(id, _)| id == call_id) {
                    call.result.clone_from(output);
                }
            }
            _ => {}
        }
    }
    calls.into_iter().map(|(_, call)| call).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(arguments: &str, output: &str) -> Vec<RoundCall> {
        round_calls(&[
            Item::ToolCall {
                call_id: "c".into(),
                name: "read".into(),
                arguments: arguments.into(),
            },
            Item::ToolResult {
                call_id: "c".into(),
                output: output.into(),
                is_error: false,
            },
        ])
    }

    #[test]
    fn repeated_rounds_get_a_note_then_stop() {
        let mut steps = Steps::new(None);
        for n in 1..LOOP_END_ROUNDS {
            assert!(steps.before_round().is_none());
            let repeats = steps.after_round(round("{}", "same"));
            if n == LOOP_NOTE_ROUNDS {
                assert!(matches!(repeats, Repeats::Note));
            } else {
                assert!(matches!(repeats, Repeats::None));
            }
        }
        let Repeats::Stop(stop) = steps.after_round(round("{}", "same")) else {
            panic!("the turn stops")
        };
        assert_eq!(stop.code, "loop_detected");
    }

    #[test]
    fn a_different_argument_or_result_is_no_loop() {
        let mut steps = Steps::new(None);
        for n in 0..20 {
            let arguments = if n % 2 == 0 { "{}" } else { "{\"a\":1}" };
            let same_result = steps.after_round(round(arguments, "same"));
            assert!(matches!(same_result, Repeats::None));
            let same_call = steps.after_round(round("{}", &n.to_string()));
            assert!(matches!(same_call, Repeats::None));
        }
    }

    #[test]
    fn results_find_their_calls_by_id_wherever_they_are() {
        let call = |id: &str, arguments: &str| Item::ToolCall {
            call_id: id.into(),
            name: "read".into(),
            arguments: arguments.into(),
        };
        let result = |id: &str, output: &str| Item::ToolResult {
            call_id: id.into(),
            output: output.into(),
            is_error: false,
        };
        let interleaved = round_calls(&[
            call("a", "1"),
            result("a", "x"),
            call("b", "2"),
            result("b", "y"),
        ]);
        let grouped = round_calls(&[
            call("a", "1"),
            call("b", "2"),
            result("b", "y"),
            result("a", "x"),
        ]);
        assert_eq!(interleaved, grouped);
        assert_eq!(interleaved[0].result, "x");
        assert_eq!(interleaved[1].result, "y");
    }

    #[test]
    fn max_steps_stops_before_the_next_round() {
        let mut steps = Steps::new(Some(2));
        assert!(steps.before_round().is_none());
        assert!(steps.before_round().is_none());
        assert_eq!(steps.before_round().unwrap().code, "step_limit");
    }
}
