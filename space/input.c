/*
 * space/input.c - the input shape and class count a space description
 * declares, or takes from its data (issue 28), or defaults to.
 */
#include "space_impl.h"

void nas__desc_input(const nas_space_desc *d, int *c, int *h, int *w, int *classes)
{
    int data = d->in_c <= 0 && d->data_c > 0; /* issue 28: the data's shape */
    if (c)
        *c = d->in_c > 0 ? d->in_c : data ? d->data_c : 1;
    if (h)
        *h = d->in_c > 0 ? d->in_h : data ? d->data_h : 28;
    if (w)
        *w = d->in_c > 0 ? d->in_w : data ? d->data_w : 28;
    if (classes)
        *classes = d->classes > 0 ? d->classes : d->data_classes > 0 ? d->data_classes : 10;
}
