"""gridsub, gridstat, griddel, gridevents."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from .. import campaigns as ops
from .. import jdl as jdl_mod
from .. import staging
from ..errors import CigriError, JdlError
from ..model import CampaignState, EventCode
from ..wording import counted
from . import output
from .app import ID, GridCommand, app, common, server_option
from .completion import campaign_ids, cluster_names


def _jdl_from_options(file: str | None, json_text: str | None, test: bool | None) -> tuple[jdl_mod.Jdl, Path]:
    """The JDL and its folder (``{JDL_DIR}``, a relative param_file's)."""
    if file and json_text:
        raise click.UsageError("give a JDL file or -j JSON, not both")
    if json_text:
        return jdl_mod.parse(jdl_mod.load_text(json_text, "-j JSON"), test=test), Path.cwd()
    if not file:
        raise click.UsageError("no JDL given: gridsub FILE (or -f FILE, or -j JSON)")
    return jdl_mod.load(file, test=test), Path(file).resolve().parent


def _extra_jobs(jobs_file: str | None, jobs_json: str | None) -> jdl_mod.Jdl:
    """A JDL holding only the param lines of ``-F``/``-J`` (for gridsub -c)."""
    if bool(jobs_file) == bool(jobs_json):
        raise click.UsageError("with -c, give the new jobs with -F FILE or -J JSON_ARRAY")
    if jobs_json:
        try:
            lines = json.loads(jobs_json)
        except json.JSONDecodeError as exc:
            raise JdlError("-J", f"not valid JSON: {exc.msg}") from exc
        if not isinstance(lines, list) or not lines or not all(isinstance(x, str) for x in lines):
            raise JdlError("-J", "expected a non-empty JSON array of param lines")
        return jdl_mod.Jdl(name="", clusters={}, params=tuple(lines))
    path = Path(jobs_file)
    if not path.is_file():
        raise JdlError("-F", f"cannot read {jobs_file}: no such file")
    return jdl_mod.Jdl(name="", clusters={}, param_file=path)


@click.command("gridsub", cls=GridCommand)
@click.argument("jdl_file", required=False, type=click.Path(dir_okay=False))
@click.option("-f", "--file", "file_opt", type=click.Path(dir_okay=False), help="JDL file (CiGri's spelling).")
@click.option("-j", "--json", "json_text", help="The JDL itself, as JSON text.")
@click.option(
    "-t",
    "--type",
    "kind",
    type=click.Choice(["default", "test"]),
    help="test: one job per cluster, before every default campaign, then the campaign ends.",
)
@click.option("-d", "--details", is_flag=True, help="Also print the campaign's JSON, once submitted (CiGri's -d).")
@click.option("-n", "--dry-run", is_flag=True, help="Validate and print the expanded jobs; write nothing.")
@click.option(
    "-c", "--campaign", type=ID, shell_complete=campaign_ids, help="Add jobs to this campaign instead (with -F or -J)."
)
@click.option("-F", "--jobs-file", type=click.Path(dir_okay=False), help="With -c: a file of param lines.")
@click.option("-J", "--jobs-json", help="With -c: a JSON array of param lines.")
@server_option
@common
def gridsub(jdl_file, file_opt, json_text, kind, details, dry_run, campaign, jobs_file, jobs_json):
    """Submit a campaign described by a JDL file (YAML or CiGri's JSON).

    Prints CAMPAIGN_ID=<id>. The campaign's jobs run on the clusters the JDL names,
    each job being exec_file followed by its param line. A cluster the state does not
    know is left out, with a warning (as CiGri does). Jobs added with -c to a terminated
    campaign put it back in treatment, its epilogues to run again after them.

    With --server (or CIGRI_SERVER), the campaign goes to a grid serve service: the JDL,
    its param_file and -F's file are read here and sent as params, {JDL_DIR} is this
    machine's folder; -n (which reads the state) is refused, and so is, by the service,
    what would make its host read or write files (data_source, output_destination...).

    \b
    Example:
        gridsub jdl-examples/sweep.yaml
        gridsub -t test -f jdl-examples/sweep.yaml
        gridsub -n jdl-examples/sweep.yaml      # prints every job, submits nothing
        gridsub -d -f jdl-examples/cigri/example.json   # and prints the campaign's JSON
        gridsub -c 3 -F more_params.txt
        gridsub --server unix:/run/cigri/api.sock jdl-examples/sweep.yaml
    """
    a = app()
    if details and dry_run:
        raise click.UsageError("-d prints what was submitted, -n submits nothing: give one of them")
    if dry_run:
        a.through_service("gridsub -n")
    if campaign is not None:
        if jdl_file or file_opt or json_text or kind:
            raise click.UsageError("-c adds the jobs of -F or -J to a campaign: give no JDL (nor -t) with it")
        extra = _extra_jobs(jobs_file, jobs_json)
        if dry_run:
            ops.check_owner(a.store.campaign(campaign), ops.current_user())
            with a.store.campaign_names(campaign) as names:
                count = sum(len(block.names) for block in jdl_mod.job_blocks(extra, names))
            click.echo(f"would add {counted(count, 'job')} to campaign {campaign}")
            return
        count = a.source.add_jobs(campaign, extra)
        click.echo(f"{counted(count, 'job')} added to campaign {campaign}")
        if details:
            output.emit_json(a.source.submitted(campaign))
        return
    if jobs_file or jobs_json:
        raise click.UsageError("-F and -J add jobs to a campaign: give -c CAMPAIGN too")
    test = None if kind is None else kind == "test"
    # read before the state is opened: a bad JDL writes nothing
    jdl, folder = _jdl_from_options(jdl_file or file_opt, json_text, test)
    if dry_run:
        jdl, warnings = ops.known_clusters(a.store, jdl)
        _dry_run(a, jdl, warnings)
        return
    campaign_id, count, warnings = a.source.submit(jdl, test, folder)
    _warn(warnings)  # once submitted: a refused campaign's error is its one line
    click.echo("Campaign successfully submitted")
    if details:
        output.emit_json(a.source.submitted(campaign_id))
    click.echo(f"CAMPAIGN_ID={campaign_id}")
    if count and sys.stderr.isatty():
        click.echo(f"{counted(count, 'job')}; they start at the next almighty pass (grid almighty)", err=True)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        click.echo(f"{click.get_current_context().command_path}: warning: {warning}", err=True)


def _dry_run(a, jdl: jdl_mod.Jdl, warnings: list[str]) -> None:
    """What gridsub -n prints: the campaign's jobs and what each cluster runs, macros expanded (the home of
    each cluster's user for what runs there, the submitter's for what is read here)."""
    ops.check_clusters(a.store, jdl, a.clock)
    expanded = list(jdl_mod.jobs_of(jdl))
    shown = ops.preview(a.store, jdl, a.clock)
    files = staging.check_inputs(jdl) if jdl.input_files else None
    _warn(warnings)
    click.echo(f"campaign {jdl.name!r} ({'test' if jdl.test_mode else 'default'}): {counted(len(expanded), 'job')}")
    if jdl.param_file:
        click.echo(f"  param_file: {jdl.param_file}")
    for name, settings in jdl.clusters.items():
        click.echo(
            f"  cluster {name}: exec_file={shown[name]['exec_file']} exec_directory={shown[name]['exec_directory']} "
            f"resources={settings['resources']} walltime={jdl_mod.format_walltime(settings['walltime'])} "
            f"type={settings['type']}"
        )
        for stage in ("prologue", "epilogue"):
            if shown[name][stage]:
                click.echo(f"    {stage}: {'; '.join(shown[name][stage])}")
    exec_file = next(iter(shown.values()))["exec_file"]
    for name, line in expanded:
        click.echo(f"  job {name}: {exec_file} {line}")
    if files:
        click.echo(f"  input files: {files[0]} ({files[1]} bytes) from {jdl.data_source}")
    click.echo("nothing submitted (--dry-run)")


def _pct(done: int, total: int) -> str:
    return f"{done}/{total} ({100 * done // total if total else 100}%)"


def _jobs_per_hour(per_hour: float | None) -> str | None:
    return None if per_hour is None else f"{per_hour:.1f} jobs/h"


def _mean_std(figures: dict) -> str | None:
    """Job duration, mean ± std, of Spritz's figures (:func:`cigri.views.spritz`)."""
    if not figures["ended"]:
        return None
    return f"{output.duration(figures['average_duration'])} ± {output.duration(figures['stddev_duration'])}"


def _end(eta: float | None, low: float | None, high: float | None) -> str | None:
    """The estimated end, and its interval when there is one."""
    if eta is None:
        return None
    return output.when(eta) + (f" ({output.when(low)} - {output.when(high)})" if low is not None else "")


def _estimate(shown: dict) -> tuple[float | None, float | None, float | None]:
    """The estimated end and its interval, as :func:`cigri.views.spritz` gives them."""
    return shown["estimated_end"], shown["estimated_end_low"], shown["estimated_end_high"]


def _show_campaign(source, campaign_id: int, headerless: bool, as_json: bool) -> None:
    data = source.summary(campaign_id)
    if as_json:
        output.emit_json(data)
        return
    running = data["state"] == CampaignState.IN_TREATMENT.value
    blocked = data["blocked"]
    state = output.campaign_state(CampaignState(data["state"])) + (f" (blocked: {blocked})" if blocked else "")
    output.pairs(
        [
            ("Campaign", f"{data['id']} {data['name']}"),
            ("User", data["user"]),
            ("Type", data["type"]),
            ("State", state),
            ("Submitted", output.when(data["submitted_at"])),
            ("Progress", _pct(data["done"], data["total"])),
            ("Running / waiting / failed", f"{data['running']} / {data['waiting']} / {data['failed']}"),
            ("Held on their clusters", data["held"]),
            ("Copies killed after running elsewhere", data["waste"]),
            ("Open events", data["open_events"]),
            ("Job duration (mean ± std)", _mean_std(data)),
            ("Throughput", _jobs_per_hour(data["throughput_per_hour"]) if running else None),
            ("Jobs left", data["left"] if running else None),
            ("Estimated end", _end(*_estimate(data)) if running else None),
            ("Ended", output.when(data["ended_at"]) if data["ended_at"] else None),
        ]
    )
    rows = [
        [
            c["cluster"],
            c["launched"],
            c["active"],
            _jobs_per_hour(c["throughput_per_hour"]) if running else None,
            _mean_std(c),
            c["left"] if running else None,
            _end(*_estimate(c)) if running else None,
            c["prologue"],
            c["epilogue"],
        ]
        for c in data["clusters"]
    ]
    output.table(
        ["Cluster", "Jobs sent", "Active", "Throughput", "Duration", "Left", "Estimated end", "Prologue", "Epilogue"],
        rows,
        headers=not headerless,
    )


def _show_eta(source, user: str | None, headerless: bool, as_json: bool) -> None:
    """Running campaigns by estimated end (the soonest first; those without an estimate last)."""
    rows = source.eta_rows(user)
    rows.sort(key=lambda r: (r["estimated_end"] is None, r["estimated_end"] or 0, r["id"]))
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ["Campaign id", "Name", "User", "Progress", "Throughput", "Left", "Estimated end", "Interval"],
        [
            [
                r["id"],
                r["name"],
                r["user"],
                _pct(r["done"], r["total"]),
                _jobs_per_hour(r["throughput_per_hour"]),
                r["left"],
                output.when(r["estimated_end"]),
                f"{output.when(r['estimated_end_low'])} - {output.when(r['estimated_end_high'])}"
                if r["estimated_end_low"] is not None
                else None,
            ]
            for r in rows
        ],
        headers=not headerless,
    )


def _show_job(source, job_id: int, stream: str | None, as_json: bool) -> None:
    if stream:
        click.echo(source.output(job_id, stream), nl=False)
        return
    data = source.job(job_id)
    if as_json:
        output.emit_json(data)
        return
    output.pairs([(k, output.when(v) if k.endswith("_at") else v) for k, v in data.items()])


def _show_rm_details(source, job_id: int, headerless: bool, as_json: bool) -> None:
    record = source.rm_details(job_id)
    if as_json:
        output.emit_json(record)
        return
    rows = [[key, value if isinstance(value, str) else json.dumps(value)] for key, value in record.items()]
    output.table(["Field", "Value"], rows, headers=not headerless)


def _show_jobs(source, campaign: int | None, user: str | None, headerless: bool, as_json: bool) -> None:
    """gridstat -f: one line per job (CiGri's job_id,remote_id,state,cluster,name,params), under a header."""
    if campaign is not None:
        source.check_campaign(campaign)
    rows = source.job_rows([campaign] if campaign is not None else source.campaign_ids(user))
    if as_json:  # streamed: a campaign may have millions of jobs
        click.echo("[", nl=False)
        first = True
        for row in rows:
            click.echo(("" if first else ",") + "\n" + json.dumps(row), nl=False)
            first = False
        click.echo("\n]")
        return
    output.table(
        ["Job", "Remote", "State", "Cluster", "Name", "Params"],
        ([r["id"], r["remote_id"], r["state"], r["cluster"], r["name"], r["params"]] for r in rows),
        headers=not headerless,
    )


@click.command("gridstat", cls=GridCommand)
@click.argument("campaign_arg", required=False, type=ID, metavar="[CAMPAIGN]", shell_complete=campaign_ids)
@click.option("-c", "--campaign", type=ID, shell_complete=campaign_ids, help="Details of one campaign.")
@click.option("-f", "--full", is_flag=True, help="One line per job: job id, remote id, state, cluster, name, params.")
@click.option("-e", "--events", "show_events", is_flag=True, help="With -c: the campaign's open events (-a: all).")
@click.option("-a", "--all", "show_all", is_flag=True, help="With -e: closed events too.")
@click.option("-j", "--job", type=ID, help="Details of one job.")
@click.option("-O", "--stdout", "show_out", is_flag=True, help="With -j: the job's stdout.")
@click.option("-E", "--stderr", "show_err", is_flag=True, help="With -j: the job's stderr.")
@click.option("-J", "--jdl", "show_jdl", is_flag=True, help="With -c: the campaign's saved JDL (owner only).")
@click.option("-u", "--user", help="Only this user's campaigns.")
@click.option("-H", "--headerless", is_flag=True, help="No header line.")
@click.option("--eta", is_flag=True, help="Running campaigns by estimated end, the soonest first.")
@click.option("-d", "--json", "as_json", is_flag=True, help="JSON output (CiGri's -d dump).")
@click.option("-p", "--pretty", is_flag=True, help="CiGri's pretty dump: the same indented JSON as -d.")
@click.option(
    "-C",
    "--rm-details",
    "rm_details",
    is_flag=True,
    help="With -j: the job as its resource manager says it, read now (scontrol, slurmrestd, oarstat, OAR's API).",
)
@click.option("--plot", is_flag=True, help="With -c: draw progress, throughput per cluster and the predicted end.")
@click.option(
    "--output", "output_file", type=click.Path(dir_okay=False), help="With --plot: draw into this PNG (matplotlib)."
)
@server_option
@common
def gridstat(
    campaign_arg,
    campaign,
    full,
    show_events,
    show_all,
    job,
    show_out,
    show_err,
    show_jdl,
    user,
    headerless,
    eta,
    as_json,
    pretty,
    rm_details,
    plot,
    output_file,
):
    """Show campaigns, one campaign, its jobs, or one job.

    A campaign's state is spelled as CiGri names it, everywhere (the list, -c, --json):
    in_treatment, paused, terminated or cancelled; the list adds how many events are open.
    -e lists a campaign's events (as gridevents -c does). -c shows Spritz's figures, for
    the campaign and for each cluster: throughput over its window (grid config spritz.window, an hour by default), job
    duration (mean ± std), jobs left, and the estimated end with its interval (--json adds the
    forecast history); --eta lists the running campaigns by estimated end. A blocked campaign has no
    estimated end (it ends once unblocked); a cluster's throughput is over the campaign's span (the
    clusters' add up to the campaign's) and its end within the campaign's. -c ID --plot draws the
    campaign's jobs done over time, the jobs ended per cluster and the predicted end at each forecast, in the
    terminal, or into a PNG with --output FILE.png (needs matplotlib: python -m pip install matplotlib, with
    the Python cigri runs with). Throughputs are over a minute at least: none for a shorter campaign.

    -j JOB -C asks the job's cluster now what its resource manager says of the job
    (CiGri's RM details): scontrol's record (slurm-ssh; sacct's once slurmctld forgot
    it), slurmrestd's (slurm-rest), oarstat's or OAR's API's (oar-ssh, oar-rest), the
    local cluster's spool row (local; without the job's environment).

    Lists show every campaign of the state; a job's outputs (-O, -E), its RM record (-C) and a
    campaign's JDL (-J) only by their owner (or root). The saved JDL has its secrets masked (***): the
    values of environment variables whose names say they are secrets (token, secret, passw, passphrase,
    credential, apikey, jwt anywhere; a part pass, pwd, key or keys).

    With --server (or CIGRI_SERVER) it asks a grid serve service, and shows the same;
    --plot, which reads the state's history, is refused there.

    \b
    Example:
        gridstat
        gridstat -c 3
        gridstat --eta
        gridstat -c 3 -f -H
        gridstat -c 3 -e --json
        gridstat -j 42 -E
        gridstat -j 42 -C
        gridstat -c 3 -J
        gridstat -c 3 --plot --output progress.png
        gridstat --server https://grid.example.org/cigri -c 3
    """
    a = app()
    campaign = campaign if campaign is not None else campaign_arg
    as_json = as_json or pretty
    if rm_details:
        if job is None:
            raise CigriError("-C goes with -j JOB: the resource manager's own record of that job")
        if show_out or show_err or full or show_events or eta or show_jdl or plot or output_file:
            raise CigriError("-j JOB -C shows the resource manager's record alone: give no other view with it")
        _show_rm_details(a.source, job, headerless, as_json)
        return
    if plot or output_file:
        if not plot or campaign is None or job is not None or full or show_events or eta or show_jdl or as_json:
            raise CigriError("--plot draws one campaign: give -c CAMPAIGN (and --output FILE.png), nothing else")
        a.through_service("gridstat --plot")
        _plot(a.store, campaign, output_file)
        return
    if (show_out or show_err) and job is None:
        raise CigriError("-O and -E go with -j JOB")
    if show_all and not show_events:
        raise CigriError("-a goes with -e (all the campaign's events)")
    if show_events:
        if campaign is None or job is not None or full or eta or show_jdl:
            raise click.UsageError("-e lists one campaign's events: give -c CAMPAIGN, and no -j, -f, -J or --eta")
        a.source.check_campaign(campaign)
        _list_events(a.source, campaign, None, show_all, None, False, headerless, as_json)
        return
    if show_jdl:
        if campaign is None or job is not None or full or eta:
            raise CigriError("-J shows one campaign's JDL: give -c CAMPAIGN, and no -j, -f or --eta")
        output.emit_json(a.source.jdl(campaign))
        return
    if eta:
        if job is not None or full or campaign is not None:
            raise CigriError("--eta lists every running campaign: give no -c, -j or -f with it")
        _show_eta(a.source, user, headerless, as_json)
        return
    if job is not None:
        _show_job(a.source, job, "stdout" if show_out else "stderr" if show_err else None, as_json)
        return
    if full:
        _show_jobs(a.source, campaign, user, headerless, as_json)
        return
    if campaign is not None:
        _show_campaign(a.source, campaign, headerless, as_json)
        return
    rows = a.source.campaign_rows(user)
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ["Campaign id", "Name", "User", "Submission time", "State", "Progress"],
        [
            [
                r["id"],
                r["name"],
                r["user"],
                output.when(r["submitted_at"]),
                output.campaign_state(CampaignState(r["state"]), r["open_events"]),
                _pct(r["done"], r["total"]),
            ]
            for r in rows
        ],
        headers=not headerless,
    )


def _plot(store, campaign_id: int, output_file: str | None) -> None:
    from ..progress import progress
    from . import plot

    if output_file is not None and not output_file.lower().endswith(".png"):
        raise CigriError(f"--output {output_file}: the picture is a PNG, name it FILE.png")
    series = progress(store, campaign_id, app().clock.now())
    if output_file is None:
        click.echo(plot.text(series), nl=False)
        return
    plot.png(series, output_file)
    click.echo(f"written: {output_file}")


def _comma_ids(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int]:
    """``-c 3,4``: CiGri's spelling of several campaign ids."""
    return [ID.convert(x.strip(), param, ctx) for x in (value or "").split(",") if x.strip()]


@click.command("griddel", cls=GridCommand)
@click.argument("ids", nargs=-1, type=ID, shell_complete=campaign_ids)
@click.option(
    "-c", "--campaigns", callback=_comma_ids, shell_complete=campaign_ids, help="Campaign ids, separated by commas."
)
@click.option(
    "-p",
    "--pause",
    is_flag=True,
    help="Pause: no new jobs; queued ones are held on their cluster; running ones finish.",
)
@click.option("-r", "--resume", is_flag=True, help="Resume paused campaigns: their held jobs are released.")
@click.option("-j", "--job", type=ID, help="Cancel this one job.")
@click.option(
    "--purge",
    is_flag=True,
    help="Forget ended (terminated or cancelled) campaigns: their jobs, events and the outputs kept here.",
)
@server_option
@common
def griddel(ids, campaigns, pause, resume, job, purge):
    """Cancel campaigns (running jobs are killed, the rest dropped), or pause / resume them.

    Pausing takes effect at the next almighty pass: the campaign's jobs queued on a cluster are held
    there (scontrol uhold, oarhold, the local queue), jobs already running keep running, and a batch
    being submitted is submitted then held. Resuming releases them. Cancelling a paused campaign
    kills its held jobs. gridstat -c shows how many jobs are held.

    --purge forgets campaigns that are over (terminated or cancelled; a running one
    is refused): their jobs, events and statistics leave the state file, and the
    stdout and stderr the local clusters kept of their jobs are deleted. Files on
    remote clusters (exec_directory, Slurm's or OAR's outputs) stay where they are.

    With --server (or CIGRI_SERVER) it asks a grid serve service: each campaign is
    then a request of its own (those before a refused one are changed).

    \b
    Example:
        griddel 3
        griddel -c 3,4
        griddel -p 3
        griddel -r 3
        griddel -j 42
        griddel --purge 3 4
        griddel --server unix:/run/cigri/api.sock -p 3
    """
    a = app()
    if sum((pause, resume, purge)) > 1:
        raise CigriError("-p, -r and --purge exclude each other")
    if job is not None:
        if ids or campaigns or pause or resume or purge:
            raise CigriError("-j cancels one job: give no campaign ids, -p, -r or --purge with it")
        click.echo(f"job {job}: {a.source.cancel_job(job)}")
        return
    targets = [*ids, *campaigns]
    if not targets:
        raise CigriError("which campaign? griddel ID [ID ...] or -c ID,ID")
    if purge:
        a.source.purge(targets)
        for campaign_id in targets:
            click.echo(f"campaign {campaign_id} purged")
        return
    done = []
    source = a.source
    # all the campaigns change, or none (griddel 1 2 with 2 already over); through a service, one request each
    with a.store.transaction() if a.server is None else contextlib.nullcontext():
        for campaign_id in targets:
            if pause:
                source.pause(campaign_id)
                done.append(f"campaign {campaign_id} paused")
            elif resume:
                source.resume(campaign_id)
                done.append(f"campaign {campaign_id} resumed")
            else:
                to_kill = source.cancel(campaign_id)
                killed = f"; {counted(to_kill, 'job')} will be killed" if to_kill else ""
                done.append(f"campaign {campaign_id} cancelled{killed}")
    for line in done:
        click.echo(line)


def _event_code(ctx: click.Context, param: click.Parameter, value: str | None) -> EventCode | None:
    """``-e CODE``, in any case; an unknown one is refused with the list of codes."""
    if value is None:
        return None
    try:
        return EventCode(value.upper())
    except ValueError:
        valid = ", ".join(c.value for c in EventCode)
        raise click.BadParameter(f"unknown event code {value!r} (valid: {valid})", ctx, param) from None


def _refuse_combinations(options: dict[str, bool], rules: list[tuple[str, list[str], str]]) -> None:
    """The first rule broken: (option given, options it excludes, why) -> a one-line error."""
    for option, excluded, why in rules:
        if options[option]:
            clash = [name for name in excluded if options[name]]
            if clash:
                raise CigriError(f"{option} and {clash[0]} exclude each other: {why}")


def _list_events(source, campaign, event_id, show_all, code, global_only, headerless, as_json) -> None:
    """The events table of gridevents (and of gridstat -c ID -e): open ones, or all with their closing."""
    rows = source.events(campaign, event_id, show_all, code, global_only)
    if as_json:
        output.emit_json(rows)
        return
    headers = ["Id", "Class", "Code", "State", "Cluster", "Campaign", "Job", "Parent", "Date", "Message"]
    closed = show_all or event_id is not None
    output.table(
        headers + (["Closed", "Why"] if closed else []),
        [
            [
                r["id"],
                r["class"],
                r["code"],
                r["state"],
                r["cluster"],
                r["campaign_id"],
                r["job_id"],
                r["parent_id"],
                output.when(r["created_at"]),
                r["message"],
                *([output.when(r["closed_at"]) if r["closed_at"] else None, r["closed_by"]] if closed else []),
            ]
            for r in rows
        ],
        headers=not headerless,
    )


@click.command("gridevents", cls=GridCommand)
@click.argument("event_id", required=False, type=ID, metavar="[EVENT_ID]")
@click.option("-c", "--campaign", type=ID, shell_complete=campaign_ids, help="Events of this campaign.")
@click.option(
    "-g", "--global", "global_only", is_flag=True, help="Global events: clusters' and the admin's blacklists."
)
@click.option("-e", "--code", callback=_event_code, help="Only events of this code (e.g. EXIT_ERROR, BLACKLIST).")
@click.option("-a", "--all", "show_all", is_flag=True, help="Closed events too, with why they were closed.")
@click.option("-f", "--fix", is_flag=True, help="Fix (close) the events: the campaign may go on.")
@click.option("-r", "--resubmit", is_flag=True, help="With -f: run the failed jobs again.")
@click.option("-H", "--headerless", is_flag=True, help="No header line.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.option(
    "--blacklist-cluster",
    metavar="NAME",
    shell_complete=cluster_names,
    help="Admin: no new job goes to this cluster, for any campaign.",
)
@click.option("--reason", help="With --blacklist-cluster or --mark-job-event: why (shown in the event).")
@click.option(
    "--unblacklist", metavar="NAME", shell_complete=cluster_names, help="Admin: lift the blacklist of this cluster."
)
@click.option(
    "--mark-job-event",
    "mark_job",
    type=ID,
    metavar="JOB",
    help="Admin: a manual event on this terminated job (its result is bad): it waits on it as a failed one.",
)
@server_option
@common
def gridevents(
    event_id,
    campaign,
    global_only,
    code,
    show_all,
    fix,
    resubmit,
    headerless,
    as_json,
    blacklist_cluster,
    reason,
    unblacklist,
    mark_job,
):
    """List events (failed jobs, blacklists, cluster problems), or fix them.

    A job that fails on a cluster opens an event (EXIT_ERROR, RESUBMIT_LIMIT) and
    blacklists that cluster for its campaign (a BLACKLIST event whose parent is the
    first failure; later failures there join it): the campaign's other clusters go
    on. Fixing the failures (-f, or -f -r to run their jobs again) lifts the
    blacklist once none of its causes is open; fixing the blacklist fixes its
    causes. A campaign whose remaining jobs all wait on open events is blocked until
    they are fixed. Cluster events (CLUSTER_UNREACHABLE) close themselves when the
    cluster answers again (-a shows them, closed, and why).

    Only a campaign's owner (or root) fixes its events. The admin (root, or the
    user owning the state file) blacklists a cluster for every campaign with
    --blacklist-cluster: no new job goes there until --unblacklist; jobs running
    there end there. --mark-job-event JOB opens a MANUAL event on a job that
    terminated but whose result is bad (CiGri's option): the job waits on it as a
    failed one does, its campaign, if over, is in treatment again, and its owner
    runs it again with -f -r.

    With --server (or CIGRI_SERVER) it asks a grid serve service; the admin's options
    (--blacklist-cluster, --unblacklist, --mark-job-event) work on the state file only.

    \b
    Example:
        gridevents -c 3
        gridevents -c 3 -e EXIT_ERROR -a
        gridevents -c 3 -f -r
        gridevents 12 -f
        gridevents -g
        gridevents --blacklist-cluster luke --reason "disk full"
        gridevents --unblacklist luke
        gridevents --mark-job-event 42 --reason "empty output"
        CIGRI_SERVER=unix:/run/cigri/api.sock gridevents -c 3 -f -r
    """
    a = app()
    given = {
        "EVENT_ID": event_id is not None,
        "-c": campaign is not None,
        "-g": global_only,
        "-e": code is not None,
        "-a": show_all,
        "-f": fix,
        "-r": resubmit,
        "-H": headerless,
        "--json": as_json,
        "--blacklist-cluster": blacklist_cluster is not None,
        "--reason": reason is not None,
        "--unblacklist": unblacklist is not None,
        "--mark-job-event": mark_job is not None,
    }
    admin = ("--blacklist-cluster", "--reason", "--unblacklist", "--mark-job-event")
    others = [name for name in given if name not in admin]
    _refuse_combinations(
        given,
        [
            (
                "--blacklist-cluster",
                [*others, "--unblacklist", "--mark-job-event"],
                "blacklisting is a command of its own",
            ),
            ("--unblacklist", [*others, "--reason", "--mark-job-event"], "lifting a blacklist is a command of its own"),
            ("--mark-job-event", others, "marking a job is a command of its own"),
            ("EVENT_ID", ["-c", "-g", "-e"], "an EVENT_ID names one event"),
            ("-c", ["-g"], "-g lists the events of no campaign"),
            ("-f", ["-a", "-g", "-H", "--json"], "-f fixes open events of a campaign (-c) or one (EVENT_ID)"),
            ("-H", ["--json"], "-H drops the table's header"),
        ],
    )
    if reason is not None and blacklist_cluster is None and mark_job is None:
        raise CigriError("--reason goes with --blacklist-cluster NAME or --mark-job-event JOB")
    if resubmit and not fix:
        raise CigriError("-r goes with -f (fix and resubmit)")
    for option in ("--blacklist-cluster", "--unblacklist", "--mark-job-event"):
        if given[option]:
            a.through_service(f"gridevents {option} (the admin's)")
    if blacklist_cluster is not None:
        event = ops.blacklist_cluster(a.store, blacklist_cluster, reason or "", a.clock)
        click.echo(f"cluster {blacklist_cluster} blacklisted (event {event}): no new jobs go there")
        return
    if mark_job is not None:
        event = ops.mark_job_event(a.store, mark_job, reason or "", a.clock)
        cid = a.store.job(mark_job).campaign_id
        rerun = f"gridevents -c {cid} -f -r runs it again"
        click.echo(f"job {mark_job} marked (event {event}): campaign {cid} waits on it ({rerun})")
        return
    if unblacklist is not None:
        event = ops.unblacklist_cluster(a.store, unblacklist, a.clock)
        click.echo(f"cluster {unblacklist}: blacklist lifted (event {event} closed)")
        return
    if fix:
        closed, resubmitted = a.source.fix_events(campaign, event_id, code, resubmit)
        fixed = counted(closed, "event") + " fixed"
        click.echo(fixed + (f", {counted(resubmitted, 'job')} resubmitted" if resubmit else ""))
        return
    if campaign is not None:
        a.source.check_campaign(campaign)
    _list_events(a.source, campaign, event_id, show_all, code, global_only, headerless, as_json)
