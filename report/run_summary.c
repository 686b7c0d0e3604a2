/*
 * report/run_summary.c - the end of `nas run` (issue 13: moved out of the
 * CLI): how the search ended, the rejected and best trials, where the
 * results are and how to resume; the warnings about failed and diverged
 * trials (issue 22) go to the log.
 */
#include <stdio.h>
#include <string.h>
#include "nas/parse.h" /* nas_shell_quote: hints that can be pasted */
#include "nas/report.h"
#include "nas/space.h" /* NAS_PATH_MAX, NAS_NAME_MAX */

static void fmt_wall(double s, char *buf, size_t n)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, (t / 60) % 60, t % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%.1fs", s);
}

/* Failed and diverged trials of a search that ran to its end. */
static void warnings(const nas_run_summary *sum, const char *ename, const char *db, FILE *log)
{
    char qdb[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)], qname[NAS_SHELL_QUOTE_MAX(NAS_NAME_MAX)];
    db = nas_shell_quote(db, qdb, sizeof qdb);
    ename = nas_shell_quote(ename, qname, sizeof qname);
    if (sum->failed > 0 && sum->done == 0) {
        fprintf(log,
                "nas run: every trial failed (%d of %d); `nas query --db %s --experiment %s` "
                "lists the reasons\n",
                sum->failed, sum->failed, db, ename);
        return;
    }
    if (sum->failed > 0)
        fprintf(log,
                "nas: warning: %d of %d trials failed; `nas query --db %s --experiment %s` lists "
                "the reasons\n",
                sum->failed, sum->done + sum->failed, db, ename);
    if (sum->diverged > 0)
        fprintf(log,
                "nas: warning: %d done trial%s diverged (flag 'diverged': train_loss not finite "
                "or > 23.03, or val_accuracy at chance level); `nas query` marks them\n",
                sum->diverged, sum->diverged == 1 ? "" : "s");
}

void nas_report_run_summary(const nas_run_summary *sum, int status, const char *ename,
                            const char *db, const char *resume, FILE *out, FILE *log)
{
    char wall[32];
    fmt_wall(sum->wall_s, wall, sizeof wall);
    if (sum->time_limit) { /* issue 33: "stopped after 10.2s (time limit reached)" */
        size_t k = strlen(wall);
        snprintf(wall + k, sizeof wall - k, " (time limit reached)");
    }
    if (status == NAS_EINTR && sum->interrupted_promotions > 0) /* issue 29 */
        fprintf(out, "nas: search '%s' stopped after %s: %d of %d trials finished (%d done, %d "
                "failed), %d interrupted, %d not yet proposed; %d promotion%s stopped (the "
                "trial%s stay%s done at %s last rung)\n",
                ename, wall, sum->done + sum->failed, sum->budget, sum->done, sum->failed,
                sum->unfinished, sum->not_proposed, sum->interrupted_promotions,
                sum->interrupted_promotions == 1 ? "" : "s",
                sum->interrupted_promotions == 1 ? "" : "s",
                sum->interrupted_promotions == 1 ? "s" : "",
                sum->interrupted_promotions == 1 ? "its" : "their");
    else if (status == NAS_EINTR)
        fprintf(out, "nas: search '%s' stopped after %s: %d of %d trials finished (%d done, %d "
                "failed), %d interrupted, %d not yet proposed\n",
                ename, wall, sum->done + sum->failed, sum->budget, sum->done, sum->failed,
                sum->unfinished, sum->not_proposed);
    else if (sum->rejected_spent) /* issue 29: not the strategy's doing */
        fprintf(out, "nas: search '%s' ended with %d trials (%d done, %d failed) of %d: %d of the "
                "multi-fidelity scheduler's %d trials were rejected by constraints.latency_ms "
                "before training, and it counts them; this run: %d trials in %s\n",
                ename, sum->done + sum->failed, sum->done, sum->failed, sum->budget,
                sum->rejected, sum->budget, sum->ran, wall);
    else if (sum->exhausted)
        fprintf(out, "nas: search '%s' ended early: the strategy found no new architecture; %d "
                "trials (%d done, %d failed) in %s\n",
                ename, sum->done + sum->failed, sum->done, sum->failed, wall);
    else
        fprintf(out, "nas: search '%s' complete: %d trials (%d done, %d failed); this run: %d "
                "trials in %s\n",
                ename, sum->done + sum->failed, sum->done, sum->failed, sum->ran, wall);
    if (sum->rejected > 0)
        fprintf(out, "  rejected: %d architecture%s over constraints.latency_ms (measured, not "
                "trained; outside the budget)\n",
                sum->rejected, sum->rejected == 1 ? "" : "s");
    if (sum->best_trial >= 0)
        fprintf(out, "  best:    trial %lld, val_accuracy %.4f\n           %s\n",
                (long long)sum->best_trial, sum->best_val_accuracy, sum->best_genotype);
    else
        fprintf(out, "  best:    none yet\n");
    char qdb[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)];
    nas_shell_quote(db, qdb, sizeof qdb);
    fprintf(out, "  results: %s   (nas query --db %s; nas show --db %s TRIAL)\n", db, qdb, qdb);
    if (status == NAS_EINTR && sum->time_limit) /* issue 33 */
        fprintf(out, "  resume:  %s   (with a larger --time-limit, or none)\n", resume);
    else if (status == NAS_EINTR)
        fprintf(out, "  resume:  %s\n", resume);
    fflush(out);
    if (status == NAS_OK)
        warnings(sum, ename, db, log);
}
