//! `/jobs`: the background commands this backend started (`async_bash`, or a `bash`
//! moved to the background), each with its state and newest output, read through
//! `jobs.control`'s `job.output`; `/jobs stop N` (or `job-N`) stops one with `job.stop`.
//! Neither waits for the turn: jobs run beside it.

use magi_client::Backend;
use magi_protocol::messages::JobParams;
use magi_protocol::methods;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::{Panel, TextPanel, words};
use crate::tui::App;

/// Lines of each job's newest output the panel shows.
const SHOWN_LINES: usize = 20;

impl App {
    /// `/jobs` with `argument`: the panel, or a stop.
    pub(super) async fn jobs_command(
        &mut self,
        backend: &mut Backend,
        argument: &str,
    ) -> anyhow::Result<()> {
        match argument.split_whitespace().collect::<Vec<_>>()[..] {
            [] => {
                let panel = self.jobs_panel(backend).await?;
                self.panel = Some(Panel::Text(panel));
            }
            ["stop", job] => {
                let job_id = if job.starts_with("job-") {
                    job.to_owned()
                } else {
                    format!("job-{job}")
                };
                let params = JobParams {
                    job_id: job_id.clone(),
                };
                self.status = match backend.call::<methods::JobStop>(&params).await? {
                    Ok(stopped) if stopped.state == "stopping" => format!("{job_id}: stopping"),
                    Ok(stopped) => format!("{job_id} had already ended ({})", stopped.state),
                    Err(magi_protocol::ErrorCode::InvalidParams) => {
                        format!("no background command {job_id} in this backend (/jobs lists them)")
                    }
                    Err(code) => words::refused("/jobs stop", code),
                };
            }
            _ => {
                self.status =
                    "/jobs lists the background commands; /jobs stop N stops one".to_owned();
            }
        }
        Ok(())
    }

    /// Every job this backend started, newest last, with its state and newest output.
    async fn jobs_panel(&mut self, backend: &mut Backend) -> anyhow::Result<TextPanel> {
        let jobs: Vec<(String, String)> = self
            .clock
            .jobs()
            .map(|(id, command, _)| (id.to_owned(), command.to_owned()))
            .collect();
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = Vec::new();
        let mut newest = 0;
        for (job_id, command) in jobs {
            if !lines.is_empty() {
                lines.push(Line::from(""));
            }
            newest = lines.len();
            let params = JobParams {
                job_id: job_id.clone(),
            };
            let (state, output) = match backend.call::<methods::JobOutput>(&params).await? {
                Ok(read) => {
                    let shown: Vec<&str> = read.output.lines().collect();
                    let from = shown.len().saturating_sub(SHOWN_LINES);
                    let skipped = read.total_lines.saturating_sub((shown.len() - from) as u64);
                    let mut output: Vec<Line<'static>> = Vec::new();
                    if skipped > 0 {
                        output.push(Line::from(Span::styled(
                            format!("  … {skipped} earlier lines"),
                            dim,
                        )));
                    }
                    output.extend(
                        shown[from..]
                            .iter()
                            .map(|line| Line::from(format!("  {line}"))),
                    );
                    if read.total_lines == 0 {
                        output.push(Line::from(Span::styled("  no output yet", dim)));
                    }
                    (read.state, output)
                }
                Err(code) => (
                    "state unknown".to_owned(),
                    vec![Line::from(Span::styled(
                        format!("  {}", words::refused("its output", code)),
                        dim,
                    ))],
                ),
            };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{job_id} · {state}"),
                    Style::default().fg(Color::Cyan),
                ),
                Span::raw(format!(" · {command}")),
            ]));
            lines.extend(output);
        }
        if lines.is_empty() {
            lines.push(Line::from("no background commands in this backend"));
        } else {
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                "/jobs stop N stops job-N · /jobs again shows newer output",
                dim,
            )));
        }
        Ok(TextPanel::new("Background commands", lines).scrolled_to(newest))
    }
}
