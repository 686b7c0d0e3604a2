/*
 * search/files.c - the directories beside the database that the search
 * keeps files in: DB.ckpt/ (issue 17: a checkpoint per trial that may be
 * promoted) and DB.weights/ (kept weights), and the temporary files a
 * killed worker leaves there. Split from controller.c and fidelity_run.c
 * (issue 29) so that the dispatch step and the multi-fidelity code use
 * them without calling each other or back into the controller.
 */
#include <dirent.h> /* opendir: temporary files killed workers left */
#include <fnmatch.h>
#include <stdio.h>
#include <unistd.h> /* unlink */
#include "search/controller_impl.h"

/* See controller_impl.h. */
void nas__ctl_fid_ckpt(const ctl *c, int64_t trial, char *buf, size_t n)
{
    snprintf(buf, n, "%s/trial-%lld.npz", c->ckpt_dir, (long long)trial);
}

/* See controller_impl.h. */
void nas__ctl_unlink_matching(const char *dir, const char *pattern)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (fnmatch(pattern, e->d_name, FNM_PERIOD) != 0)
            continue;
        char path[NAS_PATH_MAX + 320];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}
