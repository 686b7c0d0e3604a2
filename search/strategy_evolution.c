/* search/strategy_evolution.c - PLACEHOLDER until the evolution strategy lands. */
#include "strategy_impl.h"
int nas__strategy_evolution_init(nas_strategy *s, nas_error *err)
{
    (void)s;
    return nas_error_set(err, NAS_EUNSUPPORTED, "strategy 'evolution' is not built yet");
}
