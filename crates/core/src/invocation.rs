//! Which front end started this backend, as it says in the environment: hooks name it
//! as their input's `invocation`, and a backend that `exec` started asks for no session
//! titles (its front end ends with the run, and would otherwise wait at exit for the
//! title's answer).

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

    /// Whether the model is asked for session titles in this backend: not when `exec`
    /// started it.
    pub fn asks_titles(self) -> bool {
        self != Invocation::Exec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_end_is_read_from_the_environment_and_exec_asks_no_titles() {
        let with = |value: &str| Invocation::from_env(&Env::from_pairs([(INVOCATION_ENV, value)]));
        assert_eq!(with("exec"), Invocation::Exec);
        assert_eq!(with("mission_control"), Invocation::MissionControl);
        assert_eq!(with("emacs"), Invocation::LocalAgent);
        assert_eq!(
            Invocation::from_env(&Env::default()),
            Invocation::LocalAgent
        );
        assert_eq!(with("exec").name(), "exec");
        assert!(!Invocation::Exec.asks_titles());
        assert!(Invocation::MissionControl.asks_titles());
        assert!(Invocation::LocalAgent.asks_titles());
    }
}
