/* search/strategy_nao.c - PLACEHOLDER until the nao strategy lands. */
#include "strategy_impl.h"
int nas__strategy_nao_init(nas_strategy *s, nas_error *err)
{
    (void)s;
    return nas_error_set(err, NAS_EUNSUPPORTED, "strategy 'nao' is not built yet");
}
