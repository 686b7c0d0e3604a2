/*
 * report/trial_table.c - issue 33: the report's table of every trial of
 * the experiment (id, genotype, status, flag, each objective, MACs,
 * params, latency, fidelity, training seconds), one row per trial in id
 * order. Without JavaScript it is a plain table; a small inline script
 * makes every column header sort the rows (numbers numerically, text
 * alphabetically, missing values last either way; click again to reverse)
 * and remembers the choice for the session, so a live report
 * (`nas run --report`, which reloads itself) keeps its order.
 */
#include <math.h> /* isfinite */
#include <stdio.h>
#include <string.h>
#include "nas/evaluator.h" /* nas_objective_value */
#include "nas/store.h"
#include "report_impl.h"

void nas__report_html(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

void nas__report_metric_text(const nas_store_trial *t, const char *metric, char *buf, size_t n)
{
    nas_trial_result res;
    nas_store_trial_result(t, &res);
    double v = nas_objective_value(metric, &res);
    if (!isfinite(v))
        snprintf(buf, n, "-");
    else if (strcmp(metric, "val_accuracy") == 0)
        snprintf(buf, n, "%.4f", v);
    else if (strcmp(metric, "latency_ms") == 0)
        snprintf(buf, n, "%.3f", v);
    else
        snprintf(buf, n, "%.0f", v);
}

const char *nas__report_flag(const nas_store_trial *t)
{
    int done = t->status == NAS_TRIAL_DONE && t->has_result;
    if (t->flag[0])
        return t->flag;
    if (done && !isfinite(t->val_accuracy))
        return "rejected";
    if (done && !nas_store_trial_feasible(t))
        return "infeasible";
    return "";
}

static const char SORT_SCRIPT[] =
    "(function(){\n"
    "  var t = document.getElementById('trial-table');\n"
    "  if (!t || !t.tHead || !t.tBodies.length) return;\n"
    "  var ths = t.tHead.rows[0].cells, body = t.tBodies[0], KEY = 'nas-trial-sort';\n"
    "  function val(row, i, num) {\n"
    "    var c = row.cells[i], v = c.getAttribute('data-v');\n"
    "    if (v === null) v = c.textContent;\n"
    "    return num ? parseFloat(v) : v;\n"
    "  }\n"
    "  function sort(i, asc) {\n"
    "    var num = ths[i].getAttribute('data-type') === 'num';\n"
    "    var rows = Array.prototype.slice.call(body.rows);\n"
    "    rows.sort(function (a, b) {\n"
    "      var x = val(a, i, num), y = val(b, i, num);\n"
    "      if (num) {\n"
    "        var nx = isNaN(x), ny = isNaN(y);\n"
    "        if (nx || ny) return nx - ny; /* missing values last */\n"
    "        return asc ? x - y : y - x;\n"
    "      }\n"
    "      if (!x || !y) return !x - !y;\n"
    "      return asc ? x.localeCompare(y) : y.localeCompare(x);\n"
    "    });\n"
    "    for (var k = 0; k < rows.length; k++) body.appendChild(rows[k]);\n"
    "    for (var k = 0; k < ths.length; k++) ths[k].removeAttribute('aria-sort');\n"
    "    ths[i].setAttribute('aria-sort', asc ? 'ascending' : 'descending');\n"
    "    try { sessionStorage.setItem(KEY, i + (asc ? '+' : '-')); } catch (e) {}\n"
    "  }\n"
    "  for (var i = 0; i < ths.length; i++) (function (i) {\n"
    "    var th = ths[i];\n"
    "    th.tabIndex = 0;\n"
    "    th.className += ' sortable';\n"
    "    th.title = 'sort by ' + th.textContent;\n"
    "    function go() { sort(i, th.getAttribute('aria-sort') !== 'ascending'); }\n"
    "    th.addEventListener('click', go);\n"
    "    th.addEventListener('keydown', function (e) {\n"
    "      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); }\n"
    "    });\n"
    "  })(i);\n"
    "  var saved = null;\n"
    "  try { saved = sessionStorage.getItem(KEY); } catch (e) {}\n"
    "  var m = saved && /^(\\d+)([+-])$/.exec(saved);\n"
    "  if (m && +m[1] < ths.length) sort(+m[1], m[2] === '+');\n"
    "})();\n";

/* One numeric cell: the text shown and, for sorting, the exact value. */
static void num_cell(FILE *f, double v, const char *fmt)
{
    if (!isfinite(v)) {
        fputs("<td class=\"num\" data-v=\"\">-</td>", f);
        return;
    }
    fprintf(f, "<td class=\"num\" data-v=\"%.17g\">", v);
    fprintf(f, fmt, v);
    fputs("</td>", f);
}

void nas__report_trial_table(FILE *f, const nas_store_trial *t, int n, const nas_config *obj)
{
    fputs("<section id=\"trials\"><h2>All trials</h2>\n", f);
    if (n == 0) {
        fputs("<p id=\"no-trials\">No trial yet.</p></section>\n", f);
        return;
    }
    fprintf(f, "<p>Every trial of the experiment (%d), in the order they were proposed. Click a "
               "column header to sort by it (again to reverse); <em>seconds</em> are the trial's "
               "training seconds, <em>fidelity</em> the highest budget it reached in a "
               "multi-fidelity search.</p>\n", n);
    fputs("<div class=\"scroll\"><table id=\"trial-table\"><thead><tr>"
          "<th data-type=\"num\">trial</th><th>genotype</th><th>status</th><th>flag</th>", f);
    for (int k = 0; k < obj->n_objectives; k++) {
        fprintf(f, "<th data-type=\"num\">");
        nas__report_html(f, obj->objectives[k].metric);
        fprintf(f, " (%s)</th>", obj->objectives[k].maximize ? "max" : "min");
    }
    fputs("<th data-type=\"num\">MMACs</th><th data-type=\"num\">params</th>"
          "<th data-type=\"num\">latency (ms)</th><th data-type=\"num\">fidelity</th>"
          "<th data-type=\"num\">seconds</th></tr></thead>\n<tbody>\n", f);
    for (int i = 0; i < n; i++) {
        const nas_store_trial *x = &t[i];
        const char *status = nas_trial_status_name(x->status), *flag = nas__report_flag(x);
        fprintf(f, "<tr class=\"%s%s%s\" data-trial=\"%lld\"><td class=\"num\">%lld</td>"
                   "<td class=\"geno\"><code>", status, flag[0] ? " " : "", flag, (long long)x->id,
                (long long)x->id);
        nas__report_html(f, x->genotype);
        fprintf(f, "</code></td><td class=\"st\">%s</td><td class=\"flag\"", status);
        if (x->error[0]) { /* the reason as a tooltip */
            fputs(" title=\"", f);
            nas__report_html(f, x->error);
            fputs("\"", f);
        }
        fprintf(f, ">%s</td>", flag);
        int measured = x->has_result && x->status == NAS_TRIAL_DONE;
        for (int k = 0; k < obj->n_objectives; k++) {
            char v[64];
            nas__report_metric_text(x, obj->objectives[k].metric, v, sizeof v);
            nas_trial_result res;
            nas_store_trial_result(x, &res);
            double d = measured ? nas_objective_value(obj->objectives[k].metric, &res) : NAN;
            if (isfinite(d) && measured)
                fprintf(f, "<td class=\"num\" data-v=\"%.17g\">%s</td>", d, v);
            else
                fputs("<td class=\"num\" data-v=\"\">-</td>", f);
        }
        num_cell(f, x->macs > 0 ? (double)x->macs / 1e6 : NAN, "%.3f");
        num_cell(f, x->params > 0 ? (double)x->params : NAN, "%.0f");
        num_cell(f, x->latency_ms > 0 ? x->latency_ms : NAN, "%.3f");
        num_cell(f, x->fidelity >= 0 ? (double)x->fidelity : NAN, "%.0f");
        num_cell(f, x->train_seconds >= 0 ? x->train_seconds : NAN, "%.1f");
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n</section>\n", f);
}

void nas__report_trial_table_script(FILE *f)
{
    fputs(SORT_SCRIPT, f);
}
