use super::*;

/// The hooks a settings file defines, read the way startup reads them.
fn hooks_of(text: &str) -> Vec<Hook> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.toml");
    std::fs::write(&path, text).unwrap();
    magi_config::load_settings(&path, &dir.path().join("none"))
        .unwrap()
        .hooks
        .hooks
}

fn run(end: HookEnd, stdout: &str, stderr: &str) -> HookRun {
    HookRun {
        end,
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
        stdout_cut: false,
        stderr_cut: false,
    }
}

#[test]
fn exit_codes_go_on_block_or_report() {
    let hooks = hooks_of(
        "[[hooks.pre_tool_use]]\ncommand = \"check\"\n\
         [[hooks.post_tool_use]]\ncommand = \"log\"\n",
    );
    let (pre, post) = (&hooks[0], &hooks[1]);

    let mut fired = Fired::default();
    assert!(fired.take(pre, run(HookEnd::Exited(0), "ignored", ""), None, &[]));
    assert_eq!(fired, Fired::default());

    assert!(fired.take(pre, run(HookEnd::Exited(2), "", "no rm -rf\n"), None, &[]));
    assert_eq!(fired.blocked.as_deref(), Some("no rm -rf"));

    let mut fired = Fired::default();
    assert!(!fired.take(post, run(HookEnd::Exited(2), "", "stop"), None, &[]));
    assert!(fired.blocked.is_none());
    assert!(
        fired.errors[0].contains("cannot be blocked"),
        "{:?}",
        fired.errors
    );

    let mut fired = Fired::default();
    assert!(!fired.take(pre, run(HookEnd::Exited(1), "", "\nboom\nmore"), None, &[]));
    assert!(
        fired.errors[0].ends_with("exited 1: boom"),
        "{:?}",
        fired.errors
    );
    assert!(fired.errors[0].contains("pre_tool_use hook `check`"));

    let mut fired = Fired::default();
    assert!(!fired.take(pre, run(HookEnd::TimedOut, "", ""), None, &[]));
    assert!(fired.errors[0].contains("did not finish within 60s"));
    assert!(fired.blocked.is_none());

    let mut fired = Fired::default();
    fired.take(pre, run(HookEnd::Cancelled, "", ""), None, &[]);
    assert!(fired.cancelled && fired.errors.is_empty());
}

#[test]
fn prompt_hooks_add_marked_notes_within_the_budget() {
    let hooks = hooks_of("[[hooks.user_prompt_submit]]\ncommand = \"ctx\"\n");
    let hook = &hooks[0];
    let mut fired = Fired::default();
    fired.take(
        hook,
        run(HookEnd::Exited(0), "branch: main\n", ""),
        None,
        &[],
    );
    assert_eq!(
        fired.notes,
        ["<hook_note event=\"user_prompt_submit\">\nbranch: main\n</hook_note>"]
    );
    let big = "x".repeat(HOOK_EVENT_OUTPUT_BYTES);
    fired.take(hook, run(HookEnd::Exited(0), &big, ""), None, &[]);
    assert!(fired.notes[1].contains("[cut: the event's hook output budget is spent]"));
    fired.take(hook, run(HookEnd::Exited(0), "more", ""), None, &[]);
    assert_eq!(fired.notes.len(), 2);
    assert_eq!(fired.errors.len(), 1);
}

#[test]
fn json_output_controls_decisions_context_and_arguments() {
    let hooks = hooks_of(
        "[[hooks.pre_tool_use]]\ncommand = \"x\"\n\
         [[hooks.user_prompt_submit]]\ncommand = \"y\"\n",
    );
    let (pre, prompt) = (&hooks[0], &hooks[1]);
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
        "additionalProperties": false
    });
    let mut fired = Fired::default();
    let out = r#"{"updated_arguments": {"command": "ls -la"}}"#;
    assert!(fired.take(pre, run(HookEnd::Exited(0), out, ""), Some(&schema), &[]));
    assert_eq!(
        fired.updated_arguments.as_deref(),
        Some(r#"{"command":"ls -la"}"#)
    );

    let mut fired = Fired::default();
    let out = r#"{"updated_arguments": {"cmd": "ls"}}"#;
    assert!(!fired.take(pre, run(HookEnd::Exited(0), out, ""), Some(&schema), &[]));
    assert!(fired.updated_arguments.is_none());
    assert!(fired.errors[0].contains("the model's arguments are used"));

    let mut fired = Fired::default();
    let out = r#"{"decision": "block", "reason": "not on main"}"#;
    fired.take(prompt, run(HookEnd::Exited(0), out, ""), None, &[]);
    assert_eq!(fired.blocked.as_deref(), Some("not on main"));

    let mut fired = Fired::default();
    let out = r#"{"decision": "allow", "context": "be brief"}"#;
    fired.take(prompt, run(HookEnd::Exited(0), out, ""), None, &[]);
    assert!(fired.blocked.is_none() && fired.notes[0].contains("be brief"));

    let mut fired = Fired::default();
    fired.take(
        prompt,
        run(HookEnd::Exited(0), r#"{"colour": 1}"#, ""),
        None,
        &[],
    );
    assert!(fired.errors[0].contains("not hook output"));
}

#[test]
fn what_a_hook_says_and_is_given_is_redacted() {
    let hooks = hooks_of("[[hooks.user_prompt_submit]]\ncommand = \"y\"\n");
    let secret = "sk-live-0123456789abcdef".to_owned();
    let secrets = std::slice::from_ref(&secret);
    let mut fired = Fired::default();
    let out = format!("token {secret}");
    fired.take(&hooks[0], run(HookEnd::Exited(2), "", &out), None, secrets);
    assert!(!fired.blocked.unwrap().contains(&secret));

    let common = Common {
        session_id: "s",
        run_id: Some("r"),
        cwd: Path::new("/w"),
        invocation: "exec",
    };
    let mut fields = Map::new();
    fields.insert(
        "prompt".into(),
        input_text(&format!("use {secret}"), secrets),
    );
    let bytes = input(HookEvent::UserPromptSubmit, &common, fields, secrets);
    let text = String::from_utf8(bytes).unwrap();
    assert!(!text.contains(&secret), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["event"], "user_prompt_submit");
    assert_eq!(value["invocation"], "exec");
    assert_eq!(value["cwd"], "/w");
}

#[test]
fn matching_follows_the_matcher_and_the_invocation_follows_the_front_end() {
    let hooks = hooks_of(
        "[[hooks.pre_tool_use]]\ncommand = \"a\"\nmatcher = \"ba*\"\n\
         [[hooks.pre_tool_use]]\ncommand = \"b\"\n\
         [[hooks.turn_end]]\ncommand = \"c\"\n",
    );
    let env = Env::from_pairs([("MAGI_INVOCATION", "exec"), ("SHELL", "sh")]);
    let hooks = Hooks::new(hooks, &env, Invocation::from_env(&env));
    assert_eq!(hooks.invocation(), "exec");
    assert!(hooks.shell.is_none());
    let names = |subject| {
        hooks
            .matching(HookEvent::PreToolUse, Some(subject))
            .into_iter()
            .map(|h| h.command)
            .collect::<Vec<_>>()
    };
    assert_eq!(names("bash"), ["a", "b"]);
    assert_eq!(names("read"), ["b"]);
    assert_eq!(hooks.matching(HookEvent::TurnEnd, None).len(), 1);
    assert_eq!(
        Hooks::new(Vec::new(), &Env::default(), Invocation::default()).invocation(),
        "local_agent"
    );
}
