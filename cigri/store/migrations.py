"""Named schema steps, applied in order inside one transaction and recorded in ``_migrations``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

# the partial index's condition, repeated word for word by the queries that must use the index;
# the OR form costs less than IN (...) on each of a million inserted rows
ACTIVE = "(state = 'launching' OR state = 'submitted' OR state = 'running')"


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run each statement of ``script`` in the current transaction (``executescript`` would commit)."""
    statement = ""
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                conn.execute(statement)
            statement = ""


def _m001_initial(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        f"""
        -- instance: a random id that makes this state's batch keys unique on shared clusters
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('instance', lower(hex(randomblob(4))));
        CREATE TABLE clusters (
            name TEXT PRIMARY KEY,
            adapter TEXT NOT NULL,
            config TEXT NOT NULL DEFAULT '{{}}',
            created_at REAL NOT NULL
        );
        CREATE TABLE campaigns (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            user TEXT NOT NULL,
            type TEXT NOT NULL,
            state TEXT NOT NULL,
            submitted_at REAL NOT NULL,
            ended_at REAL,
            nb_jobs INTEGER NOT NULL DEFAULT 0,
            jdl TEXT NOT NULL
        );
        CREATE INDEX campaigns_state ON campaigns(state);
        -- one row per (campaign, cluster): the cluster's resolved settings and its prologue/epilogue
        CREATE TABLE campaign_clusters (
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            settings TEXT NOT NULL,
            prologue_state TEXT NOT NULL DEFAULT 'none',
            prologue_remote TEXT,
            epilogue_state TEXT NOT NULL DEFAULT 'none',
            epilogue_remote TEXT,
            launched INTEGER NOT NULL DEFAULT 0,  -- jobs ever sent there (a test campaign sends one)
            PRIMARY KEY (campaign_id, cluster)
        ) WITHOUT ROWID;
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            params TEXT NOT NULL,
            state TEXT NOT NULL,
            cluster TEXT,
            remote_id TEXT,
            batch_id INTEGER,
            exit_code INTEGER,
            submitted_at REAL,
            started_at REAL,
            ended_at REAL,
            resubmits INTEGER NOT NULL DEFAULT 0,
            kill_requested INTEGER NOT NULL DEFAULT 0
        );
        -- the metascheduler's seek: next to_launch jobs of a campaign, in order
        CREATE INDEX jobs_campaign_state ON jobs(campaign_id, state, id);
        -- the updator's and nikita's working sets stay small whatever the campaign sizes
        CREATE INDEX jobs_active ON jobs(cluster, state) WHERE {ACTIVE};
        CREATE INDEX jobs_batch ON jobs(batch_id) WHERE batch_id IS NOT NULL;
        CREATE INDEX jobs_kill ON jobs(kill_requested) WHERE kill_requested = 1;
        -- counts per (campaign, state), kept by the trigger below, so nothing counts a million rows
        CREATE TABLE job_counts (
            campaign_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (campaign_id, state)
        ) WITHOUT ROWID;
        CREATE TRIGGER jobs_count_state AFTER UPDATE OF state ON jobs
        WHEN old.state IS NOT new.state BEGIN
            UPDATE job_counts SET n = n - 1 WHERE campaign_id = old.campaign_id AND state = old.state;
            INSERT INTO job_counts (campaign_id, state, n) VALUES (new.campaign_id, new.state, 1)
                ON CONFLICT (campaign_id, state) DO UPDATE SET n = n + 1;
        END;
        -- a submission in progress: recorded before the RM is called, so a killed pass can finish it
        CREATE TABLE batches (
            id INTEGER PRIMARY KEY,
            cluster TEXT NOT NULL,
            campaign_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE INDEX batches_state ON batches(state);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            class TEXT NOT NULL,
            code TEXT NOT NULL,
            state TEXT NOT NULL,
            cluster TEXT,
            campaign_id INTEGER,
            job_id INTEGER,
            message TEXT NOT NULL,
            created_at REAL NOT NULL,
            closed_at REAL
        );
        CREATE INDEX events_open ON events(state, campaign_id) WHERE state = 'open';
        CREATE INDEX events_campaign ON events(campaign_id, id);
        -- the predictor's figures, one row per campaign
        CREATE TABLE campaign_stats (
            campaign_id INTEGER PRIMARY KEY,
            duration_sum REAL NOT NULL DEFAULT 0,
            duration_n INTEGER NOT NULL DEFAULT 0,
            duration_sq REAL NOT NULL DEFAULT 0,
            sample_at REAL,
            sample_done INTEGER NOT NULL DEFAULT 0,
            throughput REAL,
            eta REAL
        );
        """,
    )


def _m002_unknown_since(conn: sqlite3.Connection) -> None:
    # since when the RM has not known an active job: past a limit the job is taken as lost and run again
    conn.execute("ALTER TABLE jobs ADD COLUMN unknown_since REAL")


def _m003_placement(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- a job killed or taken back by a cluster is not sent back there before avoid_until
        ALTER TABLE jobs ADD COLUMN avoid_cluster TEXT;
        ALTER TABLE jobs ADD COLUMN avoid_until REAL;
        CREATE INDEX jobs_avoid ON jobs(avoid_cluster, campaign_id) WHERE avoid_cluster IS NOT NULL;
        -- a pending job to take back from its cluster: recorded before the RM is asked to cancel it
        ALTER TABLE jobs ADD COLUMN recall INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX jobs_recall ON jobs(recall) WHERE recall = 1;
        -- when cigri last saw one of its jobs start on the cluster, and last took jobs back from it:
        -- a cluster whose queued grid jobs do not start gets no queue allowance
        ALTER TABLE clusters ADD COLUMN last_start REAL;
        ALTER TABLE clusters ADD COLUMN last_recall REAL;
        -- copies left on a cluster that stayed unreachable while their jobs ran again elsewhere:
        -- cancelled (a remote id, or a batch key to look up) once it answers, their results ignored
        CREATE TABLE orphans (
            id INTEGER PRIMARY KEY,
            cluster TEXT NOT NULL,
            remote_id TEXT,
            batch_key TEXT
        );
        """,
    )


def _m004_hold(conn: sqlite3.Connection) -> None:
    # a paused campaign's queued jobs are held on their RM: 0 not held, 1 hold asked (the RM call may not
    # have happened: asked again), 2 held (the RM said so); a resumed campaign's non-zero ones are released
    conn.execute("ALTER TABLE jobs ADD COLUMN hold INTEGER NOT NULL DEFAULT 0")
    conn.execute("CREATE INDEX jobs_hold ON jobs(hold) WHERE hold != 0")


def _m005_removed_clusters(conn: sqlite3.Connection) -> None:
    # a removed cluster's settings, kept so that its jobs' outputs can still be read (gridstat -j ID -O)
    conn.execute(
        "CREATE TABLE removed_clusters (name TEXT PRIMARY KEY, adapter TEXT NOT NULL, config TEXT NOT NULL, "
        "removed_at REAL NOT NULL)"
    )


def _m006_metasched(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- the state's configuration (grid config): key -> JSON value
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        -- each metascheduler strategy's own state between passes (JSON), by strategy name
        CREATE TABLE strategy_state (name TEXT PRIMARY KEY, state TEXT NOT NULL) WITHOUT ROWID;
        -- each user's decayed slot-seconds, as of ``at``: decayed again to the pass's time when read
        CREATE TABLE user_usage (user TEXT PRIMARY KEY, value REAL NOT NULL, at REAL NOT NULL) WITHOUT ROWID;
        -- a job the metascheduler stops: recorded before the runner cancels it, then back to its bag
        ALTER TABLE jobs ADD COLUMN stop INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX jobs_stop ON jobs(stop) WHERE stop = 1;
        -- the clusters a job failed or was killed on, until it terminates (a strategy's Demand.failed)
        CREATE TABLE job_failures (
            job_id INTEGER NOT NULL,
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            PRIMARY KEY (job_id, cluster)
        ) WITHOUT ROWID;
        CREATE INDEX job_failures_campaign ON job_failures(campaign_id, cluster);
        """,
    )


def _m007_replicas(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- finalize: second copies of a job on other clusters. A row is recorded (launching) before the RM is
        -- called and submitted under its own batch key; 'origin' is the batch of the job's copy it doubles:
        -- once the job leaves that batch (it ended, or runs again elsewhere) the replica is killed. When a
        -- replica ends first, the job takes its place and the row the job's old copy, to kill.
        -- states: launching, submitted, running (live); kill (to cancel), killed, failed, late (ended after
        -- the job had ended: a duplicate), promoted (became the job's copy when the job was sent back)
        CREATE TABLE replicas (
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL,
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            origin INTEGER,
            state TEXT NOT NULL,
            remote_id TEXT,
            created_at REAL NOT NULL,
            submitted_at REAL,
            started_at REAL
        );
        CREATE INDEX replicas_state ON replicas(state, cluster);
        CREATE INDEX replicas_job ON replicas(job_id);
        CREATE INDEX replicas_campaign ON replicas(campaign_id);
        """,
    )


def _m008_batch_pack(conn: sqlite3.Connection) -> None:
    # a packed batch's layout (JSON: jobs per pack, lanes, node cores), fixed at its first submission so
    # that a killed pass finds the same packs again
    conn.execute("ALTER TABLE batches ADD COLUMN pack TEXT")


def _m009_spritz(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- Spritz per campaign: the longest duration seen, the throughput over its sliding window (jobs/s),
        -- the jobs left and the interval around the estimated end
        ALTER TABLE campaign_stats ADD COLUMN duration_max REAL;
        ALTER TABLE campaign_stats ADD COLUMN first_start REAL;  -- when Spritz first saw one of its jobs run
        ALTER TABLE campaign_stats ADD COLUMN rate REAL;
        ALTER TABLE campaign_stats ADD COLUMN left INTEGER;
        ALTER TABLE campaign_stats ADD COLUMN eta_low REAL;
        ALTER TABLE campaign_stats ADD COLUMN eta_high REAL;
        -- the same per (campaign, cluster): running sums of the durations of the jobs that terminated there
        CREATE TABLE cluster_stats (
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            duration_n INTEGER NOT NULL DEFAULT 0,
            duration_sum REAL NOT NULL DEFAULT 0,
            duration_sq REAL NOT NULL DEFAULT 0,
            duration_max REAL,
            first_start REAL,
            rate REAL,
            left INTEGER,
            eta REAL,
            eta_low REAL,
            eta_high REAL,
            PRIMARY KEY (campaign_id, cluster)
        ) WITHOUT ROWID;
        -- terminations per (campaign, cluster, time bucket): the sliding window's throughput sums a few
        -- buckets; buckets older than the window are deleted (by bucket: indexed)
        CREATE TABLE spritz_ends (
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            bucket REAL NOT NULL,  -- the bucket's start (epoch seconds)
            n INTEGER NOT NULL,
            PRIMARY KEY (campaign_id, cluster, bucket)
        ) WITHOUT ROWID;
        CREATE INDEX spritz_ends_bucket ON spritz_ends(bucket);
        -- every forecast with its time (cluster '' for the whole campaign), thinned as it ages (Store.add_forecasts)
        CREATE TABLE forecasts (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            at REAL NOT NULL,
            done INTEGER NOT NULL,
            left INTEGER NOT NULL,
            rate REAL,
            mean REAL,
            std REAL,
            eta REAL,
            eta_low REAL,
            eta_high REAL
        );
        CREATE INDEX forecasts_campaign ON forecasts(campaign_id, cluster, at);
        -- the state's recent failed fraction counts its job events of the last window
        CREATE INDEX events_class ON events(class, created_at);
        """,
    )


def _m010_nikita(conn: sqlite3.Connection) -> None:
    # a kill nikita asked for its own reasons ('flooding', 'timeout', 'walltime'): recorded before the RM is
    # called, cleared once the job is back in its bag; a pass killed in between asks it again
    conn.execute("ALTER TABLE jobs ADD COLUMN nikita TEXT")
    conn.execute("CREATE INDEX jobs_nikita ON jobs(nikita) WHERE nikita IS NOT NULL")


def _m011_events(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- an event's cause: a blacklist's first cause; a later cause points to the blacklist it joined
        ALTER TABLE events ADD COLUMN parent_id INTEGER;
        CREATE INDEX events_parent ON events(parent_id) WHERE parent_id IS NOT NULL;
        -- why a closed event was closed (who fixed it, the cluster answering again, its causes fixed)
        ALTER TABLE events ADD COLUMN closed_by TEXT;
        -- the campaign a stale copy belongs to, and the copies of its jobs killed after they ran elsewhere
        ALTER TABLE orphans ADD COLUMN campaign_id INTEGER;
        ALTER TABLE campaigns ADD COLUMN waste INTEGER NOT NULL DEFAULT 0;
        """,
    )


def _m012_resubmit(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- deferred: exit 67, run again once every other job of its campaign was launched
        ALTER TABLE jobs ADD COLUMN deferred INTEGER NOT NULL DEFAULT 0;
        -- resumes: times it went back without a failure (preempted by its RM, checkpointed), bounded apart
        ALTER TABLE jobs ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
        -- the cluster holding its checkpoint: it resumes there, before the fresh jobs of its campaign
        ALTER TABLE jobs ADD COLUMN checkpoint_cluster TEXT;
        -- retry_resources: its walltime is its campaign's times this (after walltime kills), up to the cap
        ALTER TABLE jobs ADD COLUMN walltime_scale REAL;
        CREATE INDEX jobs_deferred ON jobs(campaign_id, id) WHERE deferred = 1;
        -- the jobs waiting to resume, found without reading those that resumed already
        CREATE INDEX jobs_checkpoint ON jobs(state, campaign_id, checkpoint_cluster, id)
            WHERE checkpoint_cluster IS NOT NULL;
        -- every end of a job that did not succeed, quoted in its RESUBMIT_LIMIT event
        CREATE TABLE job_ends (
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            remote_id TEXT,
            ended_at REAL NOT NULL,
            exit_code INTEGER,
            cause TEXT,
            reason TEXT NOT NULL
        );
        CREATE INDEX job_ends_job ON job_ends(job_id, id);
        -- the campaign's last ends, oldest first: 1 failed, 0 succeeded (its failure rate's window)
        ALTER TABLE campaigns ADD COLUMN recent_ends TEXT NOT NULL DEFAULT '';
        """,
    )


def _m013_blackhole(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- the black-hole detector (cigri.cycle.blackhole), written with the ends, in their transaction:
        -- per (campaign, cluster), the latest start of a job that ended normally there (the cluster ran its
        -- jobs then), and the suspects: jobs started after it that ended within blackhole.seconds (to run
        -- again elsewhere if the cluster is found to be a black hole)
        CREATE TABLE blackhole_health (
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            healthy REAL NOT NULL,
            PRIMARY KEY (campaign_id, cluster)
        ) WITHOUT ROWID;
        CREATE TABLE blackhole_suspects (
            campaign_id INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            job_id INTEGER NOT NULL,
            started REAL NOT NULL,
            seconds REAL NOT NULL,
            ended REAL NOT NULL,
            PRIMARY KEY (campaign_id, cluster, job_id)
        ) WITHOUT ROWID;
        """,
    )


FINAL = "('terminated', 'cancelled', 'skipped')"  # JobState's final states: a job there needs no file


def _m014_files(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        f"""
        -- a campaign's input files (issue 13): the key is the file's name under the campaign's data_source;
        -- waiting and remaining count the jobs using it (to_launch; not final), kept by the trigger below
        CREATE TABLE data_files (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL,
            key TEXT NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            waiting INTEGER NOT NULL DEFAULT 0,
            remaining INTEGER NOT NULL DEFAULT 0,
            UNIQUE (campaign_id, key)
        );
        CREATE INDEX data_files_waiting ON data_files(campaign_id) WHERE waiting > 0;
        -- which job uses which file, both ways
        CREATE TABLE job_files (
            file_id INTEGER NOT NULL,
            job_id INTEGER NOT NULL,
            PRIMARY KEY (file_id, job_id)
        ) WITHOUT ROWID;
        CREATE INDEX job_files_job ON job_files(job_id, file_id);
        CREATE TRIGGER jobs_files_state AFTER UPDATE OF state ON jobs
        WHEN old.state IS NOT new.state BEGIN
            UPDATE data_files SET
                waiting = waiting + (new.state = 'to_launch') - (old.state = 'to_launch'),
                remaining = remaining + (new.state NOT IN {FINAL}) - (old.state NOT IN {FINAL})
            WHERE id IN (SELECT file_id FROM job_files WHERE job_id = new.id);
        END;
        -- each cluster's cache: staging (being copied), held (there, checksum verified), unneeded (held, and
        -- no remaining job uses it: BOINC's deletion hint, for the cycle to delete)
        CREATE TABLE cluster_files (
            cluster TEXT NOT NULL,
            file_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            size INTEGER NOT NULL,
            staged_at REAL,
            last_use REAL NOT NULL,
            PRIMARY KEY (cluster, file_id)
        ) WITHOUT ROWID;
        CREATE INDEX cluster_files_file ON cluster_files(file_id);
        CREATE INDEX cluster_files_unneeded ON cluster_files(cluster) WHERE state = 'unneeded';
        CREATE TRIGGER data_files_unneeded AFTER UPDATE OF remaining ON data_files
        WHEN (old.remaining > 0) != (new.remaining > 0) BEGIN
            UPDATE cluster_files SET state = CASE WHEN new.remaining > 0 THEN 'held' ELSE 'unneeded' END
            WHERE file_id = new.id AND state != 'staging';
        END;
        -- outputs to gather (issue 13 item 5): a job of a campaign listed here that terminates is queued
        CREATE TABLE output_campaigns (campaign_id INTEGER PRIMARY KEY);
        CREATE TABLE outputs_due (job_id INTEGER PRIMARY KEY, cluster TEXT NOT NULL);
        CREATE TRIGGER jobs_outputs_due AFTER UPDATE OF state ON jobs
        WHEN new.state = 'terminated' AND old.state != 'terminated'
            AND EXISTS (SELECT 1 FROM output_campaigns WHERE campaign_id = new.campaign_id) BEGIN
            INSERT OR IGNORE INTO outputs_due (job_id, cluster) VALUES (new.id, coalesce(new.cluster, ''));
        END;
        """,
    )


def _m017_notify(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        -- gridnotify (issue 14, item 3): who is told, where (a mail address or a webhook URL), from which
        -- severity on; and the outbox: one row per (subscription, topic) so that each notification is sent
        -- once, retried a bounded number of times while its server fails
        CREATE TABLE subscriptions (
            id INTEGER PRIMARY KEY,
            user TEXT NOT NULL,
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            severity TEXT NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (user, kind, target)
        );
        CREATE TABLE notifications (
            id INTEGER PRIMARY KEY,
            subscription_id INTEGER NOT NULL,
            topic TEXT NOT NULL,
            severity TEXT NOT NULL,
            subject TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at REAL NOT NULL,
            sent_at REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            UNIQUE (subscription_id, topic)
        );
        CREATE INDEX notifications_unsent ON notifications (sent_at) WHERE sent_at IS NULL;
        INSERT INTO meta VALUES ('notify_event_id', '0');
        """,
    )


def _m016_commands(conn: sqlite3.Connection) -> None:
    """Each cluster's capacity as the last pass read it, for gridclusters -u / -b (CiGri's grid usage)."""
    conn.execute(
        """
        CREATE TABLE cluster_usage (
            cluster TEXT PRIMARY KEY,
            total INTEGER NOT NULL,
            used INTEGER NOT NULL,
            grid_used INTEGER NOT NULL,
            queued INTEGER NOT NULL,
            at REAL NOT NULL
        )
        """
    )


def _m018_usage_down(conn: sqlite3.Connection) -> None:
    """The slots each cluster's RM reported down, drained or failing at the last reading."""
    conn.execute("ALTER TABLE cluster_usage ADD COLUMN down INTEGER NOT NULL DEFAULT 0")


def _m019_active_index(conn: sqlite3.Connection) -> None:
    """The active jobs' index also holds when each was submitted and started, and its campaign: nikita
    seeks the running jobs started before a time and the queued ones submitted before a time, and the flow
    step counts each campaign's queued and running jobs, from the index alone; the updator seeks the jobs
    an RM says changed by their remote ids (a pass reads what it works on, not every job on the clusters)."""
    _run_script(
        conn,
        f"""
        DROP INDEX jobs_active;
        CREATE INDEX jobs_active ON jobs(cluster, state, started_at, submitted_at, campaign_id) WHERE {ACTIVE};
        CREATE INDEX jobs_remote ON jobs(cluster, remote_id) WHERE {ACTIVE};
        """,
    )


def _m020_counters(conn: sqlite3.Connection) -> None:
    """The counts a change of jobs' states keeps (per campaign and state, per input file, the outputs due)
    are written by the code that changes them, a statement per change rather than three triggers per job
    (:mod:`cigri.store.states`)."""
    _run_script(
        conn,
        """
        DROP TRIGGER jobs_count_state;
        DROP TRIGGER jobs_files_state;
        DROP TRIGGER jobs_outputs_due;
        """,
    )


def _m021_cache_by_state(conn: sqlite3.Connection) -> None:
    """Staged copies live in ``<cache_dir>/<state id>/<campaign id>/`` (two states of one login shared
    ``<cache_dir>/<campaign id>/``, and one's clean-up deleted the other's inputs): the copies made before are
    where no job looks any more, so they are forgotten and staged again where jobs look."""
    conn.execute("DELETE FROM cluster_files")


def _m022_cluster_ends(conn: sqlite3.Connection) -> None:
    """Each campaign's latest ends on each cluster ("1" failed, "0" succeeded): past ``blacklist.errors``
    failures among them, its job errors there close the cluster to it (cigri.events)."""
    conn.execute(
        "CREATE TABLE cluster_ends (campaign_id INTEGER NOT NULL, cluster TEXT NOT NULL, "
        "recent TEXT NOT NULL DEFAULT '', PRIMARY KEY (campaign_id, cluster)) WITHOUT ROWID"
    )


def _m023_id_floors(conn: sqlite3.Connection) -> None:
    """The highest campaign and job ids a purge deleted: ids are never given again (a campaign's output
    folders are named by its id, and a job's id is the user's handle on it)."""
    conn.execute("CREATE TABLE id_floors (name TEXT PRIMARY KEY, last INTEGER NOT NULL) WITHOUT ROWID")


def _m024_cluster_kills(conn: sqlite3.Connection) -> None:
    """Each cluster's kills of cigri's running jobs that were its own doing (preemptions, node failures, jobs
    lost to an outage): over the run time of its jobs, its hazard, which keeps long jobs off clusters that
    would likely kill them (cigri.scheduling)."""
    conn.execute("CREATE TABLE cluster_kills (cluster TEXT PRIMARY KEY, kills INTEGER NOT NULL) WITHOUT ROWID")


def _m025_job_errors(conn: sqlite3.Connection) -> None:
    """How many times each job ran again after an error of its own (``resubmit.error_retries``)."""
    conn.execute("ALTER TABLE jobs ADD COLUMN errors INTEGER NOT NULL DEFAULT 0")


def _m026_campaign_state_cover(conn: sqlite3.Connection) -> None:
    """The campaigns' index also holds each job's cluster and start, after its id (its order stays the same):
    Spritz's figures of a campaign's active jobs (Store.on_clusters, each pass) are read from the index alone,
    without reading their rows."""
    _run_script(
        conn,
        """
        DROP INDEX jobs_campaign_state;
        CREATE INDEX jobs_campaign_state ON jobs(campaign_id, state, id, cluster, started_at);
        """,
    )


def _m027_job_places(conn: sqlite3.Connection) -> None:
    """Cigri's active jobs per (cluster, state, campaign), kept by the code that changes their states as
    job_counts is (cigri.store.states): the flow's reading of a cluster counts its queued and running jobs
    there each pass, and a count of them read every job there (a thousand rows on a big cluster).

    And the updator's index of remote ids holds the jobs that have one and have not ended (the active ones
    once submitted, and those cancelled there): a job enters it once, when submitted, and leaves it once,
    when it ends or goes back to its bag, where it was written again at each change of its state (launching
    with no remote id, submitted, running, ended)."""
    _run_script(
        conn,
        f"""
        DROP INDEX jobs_remote;
        CREATE INDEX jobs_remote ON jobs(cluster, remote_id) WHERE remote_id IS NOT NULL AND ended_at IS NULL;
        CREATE TABLE job_places (
            cluster TEXT NOT NULL,
            state TEXT NOT NULL,
            campaign_id INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (cluster, state, campaign_id)
        ) WITHOUT ROWID;
        INSERT INTO job_places (cluster, state, campaign_id, n)
            SELECT coalesce(cluster, ''), state, campaign_id, count(*) FROM jobs WHERE {ACTIVE}
            GROUP BY coalesce(cluster, ''), state, campaign_id;
        """,
    )


def _m028_waiting_avoid(conn: sqlite3.Connection) -> None:
    """The index of the jobs kept off a cluster for a while holds only those waiting in their bag, the ones its
    readers ask for (the metascheduler's snapshot and each cluster's picking, every pass): a job keeps its
    avoid_cluster once it runs again and ends, and the index grew with every requeue of the state's history."""
    _run_script(
        conn,
        """
        DROP INDEX jobs_avoid;
        CREATE INDEX jobs_avoid ON jobs(avoid_cluster, campaign_id) WHERE avoid_cluster IS NOT NULL
            AND state = 'to_launch';
        """,
    )


def _m029_cluster_seconds(conn: sqlite3.Connection) -> None:
    """Each cluster's run time of the jobs that terminated there, kept beside its kills (its hazard's
    denominator), where each pass summed the figures of every campaign that ever ran there."""
    _run_script(
        conn,
        """
        ALTER TABLE cluster_kills ADD COLUMN seconds REAL NOT NULL DEFAULT 0;
        INSERT INTO cluster_kills (cluster, kills, seconds)
            SELECT cluster, 0, sum(duration_sum) FROM cluster_stats WHERE true GROUP BY cluster
            ON CONFLICT (cluster) DO UPDATE SET seconds = excluded.seconds;
        """,
    )


def _m030_campaigns_ended(conn: sqlite3.Connection) -> None:
    """The ended campaigns by end time: the cycle remembers what the latest ones taught of the clusters'
    speeds, and reads them again only when one more ended (the latest end, one seek)."""
    _run_script(conn, "CREATE INDEX campaigns_ended ON campaigns(ended_at) WHERE ended_at IS NOT NULL;")


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_initial", _m001_initial),
    ("002_unknown_since", _m002_unknown_since),
    ("003_placement", _m003_placement),
    ("004_hold", _m004_hold),
    ("005_removed_clusters", _m005_removed_clusters),
    ("006_metasched", _m006_metasched),
    ("007_replicas", _m007_replicas),
    ("008_batch_pack", _m008_batch_pack),
    ("009_spritz", _m009_spritz),
    ("010_nikita", _m010_nikita),
    ("011_events", _m011_events),
    ("012_resubmit", _m012_resubmit),
    ("013_blackhole", _m013_blackhole),
    ("014_files", _m014_files),
    ("016_commands", _m016_commands),
    ("017_notify", _m017_notify),
    ("018_usage_down", _m018_usage_down),
    ("019_active_index", _m019_active_index),
    ("020_counters", _m020_counters),
    ("021_cache_by_state", _m021_cache_by_state),
    ("022_cluster_ends", _m022_cluster_ends),
    ("023_id_floors", _m023_id_floors),
    ("024_cluster_kills", _m024_cluster_kills),
    ("025_job_errors", _m025_job_errors),
    ("026_campaign_state_cover", _m026_campaign_state_cover),
    ("027_job_places", _m027_job_places),
    ("028_waiting_avoid", _m028_waiting_avoid),
    ("029_cluster_seconds", _m029_cluster_seconds),
    ("030_campaigns_ended", _m030_campaigns_ended),
]


def apply(conn: sqlite3.Connection) -> list[str]:
    """Apply the migrations not yet recorded; return their names. Runs in one IMMEDIATE transaction
    so that two processes opening a new state file at once do not both migrate it."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    if all(name in done for name, _ in MIGRATIONS):
        return []
    applied = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
        for name, step in MIGRATIONS:
            if name in done:
                continue
            step(conn)
            conn.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", (name,))
            applied.append(name)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
