//! Which front end started this backend, as it says in the environment: hooks name it
//! as their input's `invocation`, and a backend that `exec` started asks for a session's
//! title beside the turn rather than after it (its front end ends with the run, and
//! must never wait at exit for the title's answer).

use magi_config::Env;

/// The environment variable a front end sets on the backend it starts to say what it
/// is (`exec`, `mission_control`). Any other client is `local_agent`.
pub const INVOCATION_ENV: &str = "MAGI_INVOCATION";

/// The front end that started this backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Invocation {
    /// Any client that does not say (an editor, a desktop app, a test).
    #[default]
    LocalAgent,
    /// `magi-code exec`: one run, then the backend ends.
    Exec,
    /// Mission Control, the terminal client.
    MissionControl,
}

impl Invocation {
    /// What `env`'s [`INVOCATION_ENV`] says; an absent or unknown value is
    /// [`Invocation::LocalAgent`].
    pub fn from_env(env: &Env) -> Invocation {
        match env.get(INVOCATION_ENV) {
            Some("exec") => Invocation::Exec,
            Some("mission_control") => Invocation::MissionControl,
            _ => Invocation::LocalAgent,
        }
    }

    /// Its name, as a hook's input gives it.
    pub fn name(self) -> &'static str {
        match self {
            Invocation::LocalAgent => "local_agent",
            Invocation::Exec => "exec",
            Invocation::MissionControl => "mission_control",
        }
    }

    /// When this backend asks for a session's title, given whether its provider
    /// serves requests side by side (`ProviderDefinition::concurrent_requests`).
    pub fn title_timing(self, concurrent_requests: bool) -> TitleTiming {
        match self {
            // Only beside the turn; on a server with one slot it would hold the
            // turn's own request back, so not at all.
            Invocation::Exec if concurrent_requests => TitleTiming::BesideTurn,
            Invocation::Exec => TitleTiming::Never,
            Invocation::LocalAgent | Invocation::MissionControl => TitleTiming::AfterTurn,
        }
    }
}

/// When a backend asks the model for an untitled session's title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleTiming {
    /// After a completed turn's terminal event, from its prompt and reply.
    AfterTurn,
    /// Beside the turn's first model request, from its prompt, kept only if answered
    /// by the turn's end.
    BesideTurn,
    /// Not at all.
    Never,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_end_is_read_from_the_environment_and_exec_asks_titles_beside_the_turn() {
        let with = |value: &str| Invocation::from_env(&Env::from_pairs([(INVOCATION_ENV, value)]));
        assert_eq!(with("exec"), Invocation::Exec);
        assert_eq!(with("mission_control"), Invocation::MissionControl);
        assert_eq!(with("emacs"), Invocation::LocalAgent);
        assert_eq!(
            Invocation::from_env(&Env::default()),
            Invocation::LocalAgent
        );
        assert_eq!(with("exec").name(), "exec");
        assert_eq!(Invocation::Exec.title_timing(true), TitleTiming::BesideTurn);
        assert_eq!(Invocation::Exec.title_timing(false), TitleTiming::Never);
        for front_end in [Invocation::MissionControl, Invocation::LocalAgent] {
            for concurrent in [true, false] {
                assert_eq!(front_end.title_timing(concurrent), TitleTiming::AfterTurn);
            }
        }
    }
}
