/* models/table_impl.h — the look-ups every model family's table offers (internal header): an entry by
 * name, the count, the i-th entry and every name joined by '|' in table order, written once for the
 * image, graph, sequence and molecule tables. The entry type must have a `const char *name` field. */
#ifndef ATTNLAB_MODELS_TABLE_IMPL_H
#define ATTNLAB_MODELS_TABLE_IMPL_H
#include <stdio.h>
#include <string.h>

/* Defines  const TYPE *FIND(const char *name)   (NULL if unknown),
 *          int COUNT(void),  const TYPE *AT(int i)   (NULL outside [0, COUNT())),
 *          const char *NAMES(void)   ("a|b|c", built once)
 * over the static array TABLE of TYPE. */
#define AL__MODEL_TABLE(TYPE, TABLE, FIND, COUNT, AT, NAMES)                                            \
    const TYPE *FIND(const char *name)                                                                 \
    {                                                                                                  \
        for (size_t i = 0; name && i < sizeof TABLE / sizeof *TABLE; i++)                              \
            if (!strcmp(name, TABLE[i].name)) return &TABLE[i];                                        \
        return NULL;                                                                                   \
    }                                                                                                  \
    int COUNT(void) { return (int)(sizeof TABLE / sizeof *TABLE); }                                    \
    const TYPE *AT(int i) { return i >= 0 && i < COUNT() ? &TABLE[i] : NULL; }                         \
    const char *NAMES(void)                                                                            \
    {                                                                                                  \
        static char names[256];                                                                        \
        if (!names[0]) {                                                                               \
            size_t o = 0;                                                                              \
            for (int i = 0; i < COUNT() && o < sizeof names; i++)                                      \
                o += (size_t)snprintf(names + o, sizeof names - o, i ? "|%s" : "%s", TABLE[i].name);   \
        }                                                                                              \
        return names;                                                                                  \
    }
#endif
