"""Does the crawl model catch what it guards? Reverts one fix at a time (a small edit of the
package's source, restored afterwards) and runs the model test at the size CI runs it, then
prints whether the model alone failed, how long it took to, and the oracle's first line.

    python benchmarks/mutations.py [--only NAME] [--examples 12]

Each mutation names the fix it reverts: those of the crawl features' meeting points (a known
copy's 304, https over http, a withdrawn update's URL on the cluster, a replaced URL kept as a
known copy, a URL replaced back), of the new user's walk (a settings change reaching known
copies, a dry run that changes nothing) and of killed crawls (a killed run's pages passed on again,
with the replacements it made, one killed between a commit and its telling, a 304 answered after
the killed run's lease ran out) and of the long model runs (a known copy's 304 re-pointed, an
unchanged page passed on again), and of store faults (a node refusing connections at its maxclients). Fixes outside a crawl's decisions (feeds, relative
folders, exit codes) have tests of their own, named in the last column and run too. A cluster
mutation runs the model on a Redis Cluster's spread layout (the test starts one: redis-server
must be installed) with a quarter of the sequences, as CI does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "crawler_dedup"
LOGS = Path(tempfile.gettempdir()) / "mutation-logs"  # each failed model run's whole output


@dataclass
class Mutation:
    name: str
    fix: str
    path: str  # under crawler_dedup/
    old: str
    new: str
    where: str = "lmdb"  # the model's store: lmdb, cluster
    tests: str = ""  # tests of its own, run beside the model (outside a crawl's decisions)
    # why no crawl can show the revert now (a later line does the same): still run, never counted as missed
    equivalent: str = ""


MUTATIONS = (
    Mutation("known-copy-304", "a known copy's 304 never files or removes a page (issue 47: its 304 replaced the "
             "page its canonical named)", "core/decide/rules.py",
             "    if match is None or not p.config.prefer_clean_url or match.reason == Reason.CONCEPTUAL or p.fp.not_modified:",
             "    if match is None or not p.config.prefer_clean_url or match.reason == Reason.CONCEPTUAL:"),
    Mutation("known-copy-refetch", "a known copy whose match no longer stands is asked again in full (issue 47; "
             "a second line now: a settings change is asked in full before any 304 (settings-reach-known-copies), "
             "and a kept page removed or filed again leaves its copies' entries naming a record gone, so "
             "revalidation asks them in full before this rule)",
             "core/decide/rules.py", "    if not p.fp.not_modified or p.fp.copy_reason is None:\n        return None",
             "    if True:\n        return None", tests="tests/test_rules.py",
             equivalent="every known copy the model makes reaches a line before this rule: a settings change asks it "
                        "in full, a kept page removed, updated or filed again leaves its entry naming a record gone; "
                        "only site lines learned later could change its match (pages of one template: not modelled)"),
    Mutation("https-cleaner", "https is the cleaner scheme (issue 47)",
             "core/decide/cleaner.py", 'plain = 0 if url[:6].lower() == "https:" else 1', "plain = 0"),
    Mutation("replaced-url-validators", "a URL replaced by its canonical or cleaner URL keeps its validators as a "
             "known copy's (issue 47)", "core/index/revalidation.py",
             "    txn.fetch_put(url_key(superseded[\"url\"]), entry.encode())", "    pass"),
    Mutation("replaced-back", "a URL replaced and later replacing back is kept (issue 47's kept_now circle; in a "
             "crawl now the feed filter's)", "scrapy/feeds.py", "        crawl.urls.discard(replaced_by)",
             "        pass", where="none", tests="tests/test_feeds.py"),
    Mutation("withdrawn-update-url", "a withdrawn update gives the URL back to its earlier record (issue 47; "
             "only the index's URL entry differs: the model's race_update has the copy claim first, then runs "
             "`index verify`)",
             "core/decide/claims.py", "            txn.url_put(url_key(url), int(before.doc_id or 0))",
             "            pass", where="cluster", tests="tests/test_cluster_races.py"),
    Mutation("settings-reach-known-copies", "known copies asked again in full when the deciding settings change",
             "scrapy/conditional.py", " or entry.run < dedup.settings_since:", ":",
             tests="tests/test_crawl_examples.py::test_a_loosened_threshold_reaches_a_known_copy_whose_server_answers_304"),
    Mutation("dry-run-scratch", "a dry run decides on a scratch copy of the index",
             "scrapy/extension.py", "        if cfg.backend != \"lmdb\":\n            return cfg  # (memory: gone at exit anyway)",
             "        if True:\n            return cfg"),
    Mutation("killed-run-resend", "an unchanged page filed by a killed run is passed on again (its item may never "
             "have reached storage)", "core/decide/rules.py",
             "    if killed():\n        # filed by a crawl that was killed", "    if False:\n        # filed by a crawl that was killed"),
    Mutation("killed-run-304", "a 304 for a page a killed run filed passes it on (from its copy, or downloaded "
             "again: a leaf page keeps none; it matters in a race, a killed run's leaf URL asked with validators "
             "while the run looks alive and its 304 answered once its lease ran out: the model's `soon` kills)",
             "core/index/revalidation.py",
             "    passed_on = killed or cfg.unchanged", "    passed_on = cfg.unchanged",
             equivalent="the 304 reaches the decision then, which finds the run killed: a page with a kept response "
                        "is passed on from it (Oracle.after_kill checks no download after a kill), one without "
                        "is asked in full (rules.revisit's refetch, then conditional's 'kept after all'): the same "
                        "download and item either way"),
    Mutation("killed-run-supersede", "a page passed on again after a kill tells storage of the URL it replaced in "
             "that run (its signal waited for the spider's close)", "core/index/held.py",
             "    return {**gone[0], \"chain\": gone[1:]} if gone else None", "    return None",
             tests="tests/test_crawl_examples.py::test_a_crawl_killed_after_a_cleaner_url_replaced_a_page_it_kept_is_told_again"),
    Mutation("killed-run-chain", "a page passed on again after a kill tells storage of the whole chain of URLs "
             "replaced in that run (tracking -> cleaner -> canonical)", "core/decide/rules.py",
             "            \"held\": held_of(doc)}",
             "            \"held\": []}",
             tests="tests/test_crawl_examples.py::test_a_killed_crawls_chain_of_replacements_is_told_whole"),
    Mutation("killed-drop-mode", "DEDUP_REVISIT=drop takes a killed run's page for a revisit (unchanged: passed "
             "on again; edited: an update, not a copy of itself)", "core/decide/rules.py",
             "        if not killed():\n            return None", "        if True:\n            return None",
             tests="tests/test_crawl_examples.py::test_a_killed_crawls_page_is_passed_on_again_under_revisit_drop"),
    Mutation("killed-update-told", "a killed run's page coming back edited (an update) tells storage of the URLs "
             "it replaced in that run", "core/decide/rules.py",
             "        if killed():  # what the killed run's page superseded", "        if False:  # what the killed run's page superseded",
             tests="tests/test_crawl_examples.py::test_a_killed_crawls_replacement_is_told_when_its_page_comes_back_edited"),
    Mutation("killed-replaced", "a page replacing a killed run's page tells storage of what that page had replaced "
             "in its run", "core/index/held.py", "    return replaced_killed(index, txn, verdict, run)",
             "    return verdict", tests="tests/test_crawl_examples.py::test_a_killed_crawls_replacement_is_told_when_its_page_is_replaced_in_turn"),
    Mutation("run-lease", "a run whose open marker was not renewed for RUN_LEASE was killed (another host or "
             "container, where its pid says nothing)", "core/index/neardup.py",
             "            if isinstance(beat, (int, float)) and time.time() - beat > RUN_LEASE:",
             "            if False:",
             tests="tests/test_crawl_examples.py::test_a_crawl_killed_in_another_container_is_passed_on_again "
                   "tests/test_revisit.py::test_a_crawl_killed_in_another_container_is_known_killed_once_its_lease_runs_out"),
    Mutation("killed-entry-validators", "a URL whose last response a killed run wrote keeps its validators when "
             "its kept page's run ended", "core/index/revalidation.py",
             "        if killed and not found.copy_of:", "        if False:",
             tests="tests/test_crawl_examples.py::test_a_url_whose_entry_a_killed_crawl_wrote_is_asked_with_its_validators_again"),
    Mutation("killed-after-commit", "a replacement of an earlier crawl's page is carried by the replacing record too "
             "(told at once, a kill between the commit and the telling lost it: the fault run's recall miss)",
             "core/index/held.py", "    if gone:\n        chain =", "    if gone and gone.get(\"run\") == run:\n        chain =",
             tests="tests/test_crawl_examples.py::test_a_crawl_killed_between_a_replacements_commit_and_its_telling_tells_it_after"),
    Mutation("passed-on-this-run", "an unchanged page passed on again is this run's (DEDUP_UNCHANGED=keep: a page "
             "replacing it later in the crawl told storage before its item got there)", "core/decide/rules.py",
             "    passed = verdict.action == Action.KEEP and not cfg.dry_run and prior.run != p.judging.run",
             "    passed = False",
             tests="tests/test_crawl_examples.py::test_a_page_passed_on_unchanged_then_replaced_in_the_same_crawl_leaves_storage"),
    Mutation("copy-304-repoint", "a known copy's 304 dropped against another record than its entry names re-points "
             "the entry (else the next crawl downloads it in full)", "core/index/fetches.py",
             "            return replace(self, body=None, keep_copy=False, asked=True) if self.copy_of else None",
             "            return None",
             tests="tests/test_crawl_examples.py::test_a_known_copys_304_dropped_against_the_page_replacing_its_own_names_that_page_after"),
    Mutation("canonical-anew", "the same text naming another rel=canonical is filed again (an update)",
             "core/decide/rules.py",
             "    if same is None or (cfg.canonical and not p.fp.not_modified and _names_anew(p.verdict, prior)):",
             "    if same is None:",
             tests="tests/test_crawl_examples.py::test_a_page_whose_rel_canonical_changes_is_filed_again_so_the_url_it_names_replaces_it"),
    Mutation("commit-journal", "a spread commit is noted in a write journal first, so one cut off half-way is applied "
             "whole later (the cluster model kills crawlers inside a commit, half its commands sent, and runs `index "
             "verify` after the next crawl)",
             "stores/redis/spread.py",
             "            s.journal.begin(blob)\n", "            pass\n", where="cluster", tests="tests/test_cluster_journal.py"),
    Mutation("replaced-shares", "a page replaced at another's second look leaves the entries they share to the "
             "page replacing it (found by the model's ordered race and `index verify`)", "core/index/neardup.py",
             "        if heir is None and staying is not None:\n", "        if False:\n", where="cluster",
             tests="tests/test_cluster_races.py::test_a_page_replaced_at_its_second_look_leaves_the_entries_it_shared_to_the_page_replacing_it",
             equivalent="since b7677cf a response digest's entry goes to any kept page of those bytes, heir or not; "
                        "what the revert still loses is the exact words' entry, which no decision needs (the "
                        "permuted tables find the same fingerprint): `index verify` and the drops stay the same"),
    Mutation("killed-claimed-look", "a killed run's page passed on again that claimed and never confirmed has its "
             "second look (found reading the code after a fault run's recall miss; the model's `race_killed`)", "core/decide/claims.py",
             "    return claim is None or not claim.confirmed", "    return claim is None", where="cluster",
             tests="tests/test_cluster_races.py::test_a_killed_crawlers_page_that_never_claimed_has_its_second_look_when_passed_on_again"),
    Mutation("killed-unclaimed-look", "a killed run's page passed on again that never claimed has its second look "
             "(the fault run's recall miss: a crawler killed between its page's commit and its claim)",
             "core/decide/claims.py", "    return claim is None or not claim.confirmed",
             "    return claim is not None and not claim.confirmed", where="cluster",
             tests="tests/test_cluster_races.py::test_a_killed_crawlers_page_that_never_claimed_has_its_second_look_when_passed_on_again"),
    Mutation("window-match", "a kept page out of DEDUP_WINDOW matches no copy (it stops matching at once)",
             "core/decide/rules.py", "        return cutoff is None or doc.time >= cutoff", "        return True",
             tests="tests/test_rules.py::test_find_match_never_matches_the_urls_own_entry_or_a_page_out_of_the_window"),
    Mutation("window-revisit", "a URL whose entry is out of DEDUP_WINDOW is no revisit (kept again, not unchanged)",
             "core/decide/rules.py", "        p.stale, p.prior = p.prior.doc_id, None\n", "        pass\n",
             tests="tests/test_rules.py::test_out_of_window_makes_the_urls_entry_stale"),
    Mutation("window-unconditional", "a URL whose kept page is out of DEDUP_WINDOW is asked without its validators",
             "core/index/revalidation.py",
             "    if cfg.window and doc.time < (time.time() if now is None else now) - cfg.window:",
             "    if False:", tests="tests/test_conditional.py::test_a_304_that_cannot_stand_for_the_page_is_refused",
             equivalent="the 304 then reaches the decision, whose match is out of the window too: the page is "
                        "asked in full (one request more) and decided as it would have been"),
    Mutation("expire-removes", "`index expire` takes the pages it lists out of the index", "core/index/neardup.py",
             "        old = txn.time_oldest(int(before), limit)\n        for",
             "        old = txn.time_oldest(int(before), limit)[:0]\n        for", tests="tests/test_demo.py::test_index_expire_and_compact"),
    Mutation("maxclients-refusal", "a node at its maxclients is waited for as a lost connection (Redis 7's wording, "
             "a ResponseError to redis-py; found by the cluster model's node-down step)", "stores/redis/store.py",
             "        recognise_refusals(redis)\n", "        pass\n", where="cluster",
             tests="tests/test_redis_cluster.py::test_a_node_at_its_maxclients_is_waited_for_as_a_lost_connection"),
    Mutation("feed-filter", "feeds without the pages superseded later in the crawl", "scrapy/recording.py",
             "        mark(self.crawler, record[\"url\"], verdict.url)", "        pass", where="none",
             tests="tests/test_feeds.py"),
    Mutation("relative-dedup-dir", "a relative DEDUP_DIR inside the project's data folder", "scrapy/opening.py",
             "    return data_path(os.path.expanduser(path), createdir=False)",
             "    return os.path.expanduser(path)", where="none", tests="tests/test_project_paths.py"),
    Mutation("exit-code", "an index that cannot be opened fails the start (exit 1)", "scrapy/extension.py",
             "                try:\n                    Deduplicator(self.config).open(new_run=False).close()\n"
             "                except BaseException:",
             "                try:\n                    Deduplicator(self.config).open(new_run=False).close()\n"
             "                except StoreError:\n                    pass\n                except BaseException:",
             where="none", tests="tests/test_project_paths.py"),
    Mutation("claims-apart", "a claim confirms its page without a look only when the pages claimed meanwhile "
             "wrote nothing its filing looked at (issue 57's claims' notes)", "stores/redis/spread_keys.py",
             "        if wrote[string.sub(mine, i, i + 7)] then apart = false break end",
             "        if false then apart = false break end", where="cluster",
             tests="tests/test_redis_cluster.py::test_four_processes_racing_on_every_group_keep_it_once "
                   "tests/test_cluster_commands.py::test_a_quiet_claim_confirms_its_page_at_once_and_one_after_another_crawlers_claim_looks_again"),
    Mutation("batch-own-reads", "a batch's page files what its own decision read, not only what it wrote, so its "
             "claim sees another crawler's writes to what it read", "stores/redis/spread_claims.py",
             "                self._file(txn, mine, reads | writes | unowned, writes | unowned)",
             "                self._file(txn, mine, writes | unowned, writes | unowned)", where="cluster",
             tests="tests/test_cluster_batches.py::test_each_page_of_a_batch_files_what_it_read_and_wrote_itself"),
)


def run_model(where: str, examples: int) -> tuple[bool, float, str, bool]:
    test = ("test_crawl_model.py::test_sequences_of_crawls_on_lmdb" if where == "lmdb"
            else "test_crawl_model_cluster.py::test_sequences_of_crawls_on_the_spread_layout")
    env = dict(os.environ, CRAWL_MODEL_EXAMPLES=str(examples), CRAWL_MODEL_NO_SHRINK="1")
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           f"tests/{test}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=3600)
    took = time.monotonic() - began
    first = next((line.strip()[2:].strip() for line in proc.stdout.splitlines() if line.strip().startswith("E ")), "")
    if not first:  # (hypothesis's FlakyFailure: the oracle's assertion in an exception group, "| AssertionError")
        first = next((line.strip(" |") for line in proc.stdout.splitlines() if line.strip(" |").startswith("AssertionError")), "")
    if proc.returncode != 0:  # (the whole output, to read: a failure may print no E line)
        LOGS.mkdir(exist_ok=True)
        (LOGS / f"{where}-{os.getpid()}-{int(began)}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0 and not first:  # (no assertion: say how it ended, a crash or a timeout)
        first = " / ".join(line.strip() for line in (proc.stdout + proc.stderr).splitlines()[-3:])
    # found: the oracle's assertion failed (not a collection error, a fixture or a crash)
    return proc.returncode != 0 and first.startswith("AssertionError"), took, first[:150], proc.returncode != 0


def run_tests(tests: str) -> bool:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests.split()],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    return proc.returncode != 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="a mutation's name (repeatable)")
    parser.add_argument("--examples", type=int, default=40, help="the model's sequences (CI runs 40 on LMDB, 10 on the cluster)")
    args = parser.parse_args()
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # (so a mutated file is restored on the way out)
    rows = []
    for where in ("lmdb", "cluster"):  # (a model failing unmutated would find every mutation)
        base = run_model(where, args.examples)
        print(f"unmutated model on {where}: {'FAILS' if base[3] else 'passes'} in {base[1]:.0f} s {base[2]}", flush=True)
        if base[3]:  # (any failure: an error unmutated is no finding)
            return 2
    for m in MUTATIONS:
        if args.only and m.name not in args.only:
            continue
        if m.where == "none" and not m.tests:
            rows.append((m, None, 0.0, "not a crawl's decision now: nothing to revert here", None))
            continue
        path = PKG / m.path
        source = path.read_text(encoding="utf-8")
        assert source.count(m.old) == 1, f"{m.name}: the fix's text is not found once in {m.path}"
        path.write_text(source.replace(m.old, m.new), encoding="utf-8")
        try:
            found, took, first = (None, 0.0, "") if m.where == "none" else run_model(
                m.where, args.examples)[:3]
            own = run_tests(m.tests) if m.tests else None
        finally:
            path.write_text(source, encoding="utf-8")
        if m.equivalent and not found:
            found, first = None, f"equivalent: {m.equivalent}"  # (no crawl can show it: the reason instead)
        rows.append((m, found, took, first, own))
        print(f"{m.name}: model {'found' if found else 'equivalent' if m.equivalent else 'MISSED' if found is False else '-'} ({took:.0f} s)"
              + (f", own tests {'found' if own else 'MISSED'}" if own is not None else ""), flush=True)
    print(f"\n| fix reverted | model at CI size ({args.examples} sequences) | seconds | the model's first line | own tests |")
    print("|---|---|---|---|---|")
    for m, found, took, first, own in rows:
        verdict = "found" if found else "MISSED" if found is False else "equivalent" if m.equivalent else "-"
        print(f"| {m.fix} (`{m.name}`) | {verdict} | {took:.0f} | {first.replace('|', '/')[:400]} | "
              f"{'' if own is None else ('found: ' + m.tests) if own else 'MISSED: ' + m.tests} |")
    missed = [m.name for m, found, *_ in rows if found is False]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
