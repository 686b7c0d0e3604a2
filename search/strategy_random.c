/* search/strategy_random.c - PLACEHOLDER until the random strategy lands. */
#include "strategy_impl.h"
int nas__strategy_random_init(nas_strategy *s, nas_error *err)
{
    (void)s;
    return nas_error_set(err, NAS_EUNSUPPORTED, "strategy 'random' is not built yet");
}
