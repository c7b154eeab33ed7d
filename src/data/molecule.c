/* molecule.c — the many-graphs text format (molecules.txt, datasets/README.md "Molecules") and its
 * splits: header, then per molecule a `mol` line, its atom lines and its bond lines; every check
 * reports FILE:LINE. Sizes are compared with the memory budget before allocating: the per-atom and
 * per-bond arrays are bounded by the file's line count, the per-molecule ones by the declared count
 * (which must fit the lines left). */
#include "attnlab/molecule.h"
#include "attnlab/datadir.h"
#include "attnlab/io.h"
#include "data/graph_impl.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXF (AL_MOL_MAX_TARGETS + 8)   /* most fields on any line */
#define PATH al_path_short(t->path)

/* Split a line in place at spaces/tabs into at most MAXF fields; returns their count, or MAXF + 1
 * when there are more. */
static int fields(char *line, char **f)
{
    int n = 0;
    char *p = al_text_skip_ws(line);
    while (*p) {
        if (n == MAXF) return MAXF + 1;
        f[n++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        if (*p) *p++ = 0;
        p = al_text_skip_ws(p);
    }
    return n;
}

/* Field s as an integer in [lo, hi]; else an error naming what, the line and the range. */
static int get_int(al_text *t, const char *s, const char *what, long lo, long hi, long *out, al_error *err)
{
    char *p = (char *)s;
    long v;
    if (!al_text_int(&p, &v, 0) || *p) { al_seterr(err, "%s:%ld: %s '%s' is not an integer", PATH, t->line, what, s); return -1; }
    if (v < lo || v > hi) { al_seterr(err, "%s:%ld: %s %ld out of range [%ld, %ld]", PATH, t->line, what, v, lo, hi); return -1; }
    *out = v;
    return 0;
}

/* The next line, or an error saying what was expected; a blank line is an error too. */
static char *next_line(al_text *t, const char *expected, al_error *err)
{
    char *l = al_text_line(t);
    if (!l) { al_seterr(err, "%s:%ld: file ends, expected %s", PATH, t->line + 1, expected); return NULL; }
    if (!*al_text_skip_ws(l)) { al_seterr(err, "%s:%ld: empty line, expected %s", PATH, t->line, expected); return NULL; }
    return l;
}

/* Header: format line, elements, targets, molecules. */
static int read_header(al_molset *ms, al_text *t, long *nmol, al_error *err)
{
    char *f[MAXF + 1], *l;
    int n;
    if (!(l = next_line(t, "'attnlab-molecules 1'", err))) return -1;
    if (strcmp(l, "attnlab-molecules 1")) return al_seterr(err, "%s:%ld: not a molecule file (the first line must be 'attnlab-molecules 1')", PATH, t->line), -1;
    if (!(l = next_line(t, "the 'elements' line", err))) return -1;
    n = fields(l, f);
    if (n < 2 || strcmp(f[0], "elements") || n > AL_MOL_MAX_ELEMENTS + 1)
        return al_seterr(err, "%s:%ld: expected 'elements SYMBOL...' with 1 to %d symbols", PATH, t->line, AL_MOL_MAX_ELEMENTS), -1;
    for (int i = 1; i < n; i++) {
        if (strlen(f[i]) > 3) return al_seterr(err, "%s:%ld: element '%.16s' is longer than 3 characters", PATH, t->line, f[i]), -1;
        for (int j = 1; j < i; j++)
            if (!strcmp(f[i], f[j])) return al_seterr(err, "%s:%ld: element '%s' listed twice", PATH, t->line, f[i]), -1;
        snprintf(ms->elements[i - 1], sizeof ms->elements[0], "%s", f[i]);
    }
    ms->nelem = n - 1;
    if (!(l = next_line(t, "the 'targets' line", err))) return -1;
    n = fields(l, f);
    if (n < 2 || strcmp(f[0], "targets") || n > AL_MOL_MAX_TARGETS + 1)
        return al_seterr(err, "%s:%ld: expected 'targets NAME...' with 1 to %d names", PATH, t->line, AL_MOL_MAX_TARGETS), -1;
    for (int i = 1; i < n; i++) snprintf(ms->targets[i - 1], sizeof ms->targets[0], "%s", f[i]);
    ms->ntarget = n - 1;
    if (!(l = next_line(t, "the 'molecules' line", err))) return -1;
    n = fields(l, f);
    if (n != 2 || strcmp(f[0], "molecules")) return al_seterr(err, "%s:%ld: expected 'molecules COUNT'", PATH, t->line), -1;
    return get_int(t, f[1], "molecule count", 1, 0x7ffffffe, nmol, err);
}

/* Sizes from the header and the file: budget check, then one allocation per array. */
static int alloc_arrays(al_molset *ms, al_text *t, long nmol, int64_t lines, al_error *err)
{
    if (nmol > lines) return al_seterr(err, "%s:%ld: %ld molecules declared but the file has only %lld lines", PATH, t->line, nmol, (long long)lines), -1;
    uint64_t per_mol = 2 * sizeof(int64_t) + (uint64_t)ms->ntarget * sizeof(float);
    uint64_t per_line = 6 + 2 * sizeof(int) + 1;   /* an atom's six bytes or a bond's two ints and a type */
    if (al_mem_check(al_size_add(al_size_mul((uint64_t)nmol + 1, per_mol), al_size_mul((uint64_t)lines, per_line)), err,
                     "%s: %ld molecules in %lld lines", PATH, nmol, (long long)lines))
        return -1;
    size_t L = (size_t)(lines > 0 ? lines : 1);
    ms->atom_start = calloc((size_t)nmol + 1, sizeof(int64_t));
    ms->bond_start = calloc((size_t)nmol + 1, sizeof(int64_t));
    ms->y = calloc((size_t)nmol * (size_t)ms->ntarget, sizeof(float));
    ms->elem = malloc(L); ms->degree = malloc(L); ms->hs = malloc(L); ms->arom = malloc(L); ms->ring = malloc(L);
    ms->charge = malloc(L);
    ms->bond_i = malloc(L * sizeof(int)); ms->bond_j = malloc(L * sizeof(int)); ms->bond_type = malloc(L);
    if (!ms->atom_start || !ms->bond_start || !ms->y || !ms->elem || !ms->degree || !ms->hs || !ms->arom || !ms->ring ||
        !ms->charge || !ms->bond_i || !ms->bond_j || !ms->bond_type)
        return al_seterr(err, "%s: out of memory", PATH), -1;
    return 0;
}

/* The `mol ID ATOMS BONDS TARGET...` line of molecule m. */
static int read_mol_line(al_molset *ms, al_text *t, int m, long *na, long *nb, al_error *err)
{
    char *f[MAXF + 1], *l, want[48];
    snprintf(want, sizeof want, "'mol %d ...'", m);
    if (!(l = next_line(t, want, err))) return -1;
    int n = fields(l, f);
    if (n < 1 || strcmp(f[0], "mol")) return al_seterr(err, "%s:%ld: expected 'mol %d ATOMS BONDS TARGET...' (molecule %d of %d)", PATH, t->line, m, m, ms->nmol), -1;
    if (n != 4 + ms->ntarget) return al_seterr(err, "%s:%ld: 'mol' line has %d fields, expected %d (mol ID ATOMS BONDS and %d targets)", PATH, t->line, n > MAXF ? MAXF + 1 : n, 4 + ms->ntarget, ms->ntarget), -1;
    long id;
    if (get_int(t, f[1], "molecule id", 0, 0x7ffffffe, &id, err)) return -1;
    if (id != m) return al_seterr(err, "%s:%ld: molecule id %ld, expected %d (ids count 0, 1, 2, ...)", PATH, t->line, id, m), -1;
    if (get_int(t, f[2], "atom count", 1, AL_MOL_MAX_ATOMS, na, err) || get_int(t, f[3], "bond count", 0, AL_MOL_MAX_BONDS, nb, err)) return -1;
    for (int k = 0; k < ms->ntarget; k++) {
        float *y = &ms->y[(int64_t)m * ms->ntarget + k];
        if (!strcmp(f[4 + k], "nan")) { *y = NAN; continue; }
        char *e; errno = 0;
        double v = strtod(f[4 + k], &e);
        if (e == f[4 + k] || *e || errno == ERANGE || !isfinite(v) || fabs(v) > 1e30)
            return al_seterr(err, "%s:%ld: target '%.32s' is not a finite number (or nan)", PATH, t->line, f[4 + k]), -1;
        *y = (float)v;
    }
    return 0;
}

/* One atom line: ELEMENT DEGREE CHARGE HS AROMATIC RING. */
static int read_atom(al_molset *ms, al_text *t, int64_t a, al_error *err)
{
    char *f[MAXF + 1], *l;
    if (!(l = next_line(t, "an atom line 'ELEMENT DEGREE CHARGE HS AROMATIC RING'", err))) return -1;
    int n = fields(l, f);
    if (n != 6) return al_seterr(err, "%s:%ld: atom line has %d fields, expected 6 (ELEMENT DEGREE CHARGE HS AROMATIC RING)", PATH, t->line, n > MAXF ? MAXF + 1 : n), -1;
    int e = -1;
    for (int i = 0; i < ms->nelem && e < 0; i++) if (!strcmp(f[0], ms->elements[i])) e = i;
    if (e < 0) return al_seterr(err, "%s:%ld: element '%.16s' is not in the 'elements' line", PATH, t->line, f[0]), -1;
    long d, q, h, ar, r;
    if (get_int(t, f[1], "degree", 0, 6, &d, err) || get_int(t, f[2], "formal charge", -4, 4, &q, err) ||
        get_int(t, f[3], "hydrogen count", 0, 4, &h, err) || get_int(t, f[4], "aromatic flag", 0, 1, &ar, err) ||
        get_int(t, f[5], "ring flag", 0, 1, &r, err))
        return -1;
    ms->elem[a] = (uint8_t)e; ms->degree[a] = (uint8_t)d; ms->charge[a] = (int8_t)q; ms->hs[a] = (uint8_t)h;
    ms->arom[a] = (uint8_t)ar; ms->ring[a] = (uint8_t)r;
    return 0;
}

/* The bond lines of molecule m (na atoms from a0): range, self-bond, duplicate and degree checks. */
static int read_bonds(al_molset *ms, al_text *t, int m, int64_t a0, long na, int64_t b0, long nb, al_error *err)
{
    char *f[MAXF + 1], *l;
    int *deg = calloc((size_t)na, sizeof *deg);
    if (!deg) return al_seterr(err, "%s: out of memory", PATH), -1;
    for (long k = 0; k < nb; k++) {
        if (!(l = next_line(t, "a bond line 'I J TYPE'", err))) goto fail;
        int n = fields(l, f);
        if (n != 3) { al_seterr(err, "%s:%ld: bond line has %d fields, expected 3 (I J TYPE)", PATH, t->line, n > MAXF ? MAXF + 1 : n); goto fail; }
        long i, j, ty;
        if (get_int(t, f[0], "bond atom", 0, na - 1, &i, err) || get_int(t, f[1], "bond atom", 0, na - 1, &j, err) ||
            get_int(t, f[2], "bond type", 1, AL_MOL_BOND_TYPES, &ty, err))
            goto fail;
        if (i == j) { al_seterr(err, "%s:%ld: atom %ld bonded to itself (molecule %d)", PATH, t->line, i, m); goto fail; }
        if (i > j) { long s = i; i = j; j = s; }
        for (long q = 0; q < k; q++)
            if (ms->bond_i[b0 + q] == i && ms->bond_j[b0 + q] == j) {
                al_seterr(err, "%s:%ld: bond %ld-%ld listed twice in molecule %d", PATH, t->line, i, j, m); goto fail;
            }
        ms->bond_i[b0 + k] = (int)i; ms->bond_j[b0 + k] = (int)j; ms->bond_type[b0 + k] = (uint8_t)ty;
        deg[i]++; deg[j]++;
    }
    for (long a = 0; a < na; a++)
        if (deg[a] != ms->degree[a0 + a]) {
            al_seterr(err, "%s:%ld: molecule %d: atom %ld has degree %d in its atom line but %d bonds", PATH, t->line, m, a,
                      ms->degree[a0 + a], deg[a]);
            goto fail;
        }
    free(deg);
    return 0;
fail:
    free(deg);
    return -1;
}

al_status al_molset_read(al_molset *ms, const char *path, al_error *err)
{
    memset(ms, 0, sizeof *ms);
    al_text tt, *t = &tt;
    if (al_text_open_path(t, path, err)) return AL_ERR;
    long nmol;
    int64_t lines = al_text_count_lines(t);
    if (read_header(ms, t, &nmol, err) || alloc_arrays(ms, t, nmol, lines, err)) goto fail;
    ms->nmol = (int)nmol;
    int64_t a = 0, b = 0;
    for (int m = 0; m < ms->nmol; m++) {
        long na, nb;
        if (read_mol_line(ms, t, m, &na, &nb, err)) goto fail;
        if (na + nb > lines - t->line) {
            al_seterr(err, "%s:%ld: molecule %d declares %ld atoms and %ld bonds but the file has %lld lines left", PATH, t->line,
                      m, na, nb, (long long)(lines - t->line));
            goto fail;
        }
        ms->atom_start[m] = a; ms->bond_start[m] = b;
        for (long k = 0; k < na; k++) if (read_atom(ms, t, a + k, err)) goto fail;
        if (read_bonds(ms, t, m, a, na, b, nb, err)) goto fail;
        a += na; b += nb;
    }
    ms->atom_start[ms->nmol] = a; ms->bond_start[ms->nmol] = b;
    ms->natoms = a; ms->nbonds = b;
    for (int k = 0; k < ms->ntarget; k++) {   /* a column of only 0 and 1 (at least one value) is a class label */
        int bin = 0;
        for (int m = 0; m < ms->nmol && bin >= 0; m++) {
            float y = ms->y[(int64_t)m * ms->ntarget + k];
            if (isnan(y)) continue;
            bin = y == 0.f || y == 1.f ? 1 : -1;
        }
        ms->binary[k] = bin > 0;
    }
    char *l;
    while ((l = al_text_line(t)) != NULL)
        if (*al_text_skip_ws(l)) { al_seterr(err, "%s:%ld: unexpected line after the %d declared molecules", PATH, t->line, ms->nmol); goto fail; }
    al_text_close(t);
    return AL_OK;
fail:
    al_text_close(t);
    al_molset_free(ms);
    return AL_ERR;
}

/* ---------------- names and 2-D coordinates (coords.txt) ---------------- */
#define MAX_NAME 256
#define MAX_COORD 1e4

/* The next space-separated token at *pp, NUL-terminated in place; *pp moves past it and the spaces after. */
static char *token(char **pp)
{
    char *s = al_text_skip_ws(*pp), *e = s;
    while (*e && *e != ' ' && *e != '\t') e++;
    if (*e) *e++ = 0;
    *pp = al_text_skip_ws(e);
    return s;
}

/* `mol ID ATOMS NAME` of molecule m: its name (the rest of the line, trailing blanks cut) copied to
 * names at *used. */
static int read_name_line(const al_molset *ms, al_text *t, int m, char *names, int64_t *used, al_error *err)
{
    char want[48], *l;
    snprintf(want, sizeof want, "'mol %d ATOMS NAME'", m);
    if (!(l = next_line(t, want, err))) return -1;
    char *p = l, *kw = token(&p), *id = token(&p), *na = token(&p);
    long v, atoms = ms->atom_start[m + 1] - ms->atom_start[m];
    if (strcmp(kw, "mol")) return al_seterr(err, "%s:%ld: expected 'mol %d ATOMS NAME'", PATH, t->line, m), -1;
    if (get_int(t, id, "molecule id", 0, 0x7ffffffe, &v, err)) return -1;
    if (v != m) return al_seterr(err, "%s:%ld: molecule id %ld, expected %d (ids count 0, 1, 2, ...)", PATH, t->line, v, m), -1;
    if (get_int(t, na, "atom count", 1, AL_MOL_MAX_ATOMS, &v, err)) return -1;
    if (v != atoms) return al_seterr(err, "%s:%ld: molecule %d has %ld atoms here but %ld in molecules.txt", PATH, t->line, m, v, atoms), -1;
    size_t L = strlen(p);
    while (L > 0 && (p[L - 1] == ' ' || p[L - 1] == '\t')) L--;
    if (L == 0 || L >= MAX_NAME) return al_seterr(err, "%s:%ld: molecule %d: the name must have 1 to %d characters", PATH, t->line, m, MAX_NAME - 1), -1;
    memcpy(names + *used, p, L); names[*used + (int64_t)L] = 0;
    *used += (int64_t)L + 1;
    return 0;
}

/* One `X Y` line of atom a. */
static int read_xy(al_text *t, float *xy, al_error *err)
{
    char *f[MAXF + 1], *l = next_line(t, "'X Y' of an atom", err);
    if (!l) return -1;
    int n = fields(l, f);
    if (n != 2) return al_seterr(err, "%s:%ld: expected 'X Y' (2 fields), got %d", PATH, t->line, n > MAXF ? MAXF + 1 : n), -1;
    for (int k = 0; k < 2; k++) {
        char *e; errno = 0;
        double v = strtod(f[k], &e);
        if (e == f[k] || *e || errno == ERANGE || !(fabs(v) <= MAX_COORD))
            return al_seterr(err, "%s:%ld: coordinate '%.32s' is not a number in [-%g, %g]", PATH, t->line, f[k], MAX_COORD, MAX_COORD), -1;
        xy[k] = (float)v;
    }
    return 0;
}

al_status al_molset_read_coords(al_molset *ms, const char *path, al_error *err)
{
    al_text tt, *t = &tt;
    if (al_text_open_path(t, path, err)) return AL_ERR;
    int64_t lines = al_text_count_lines(t), used = 0;
    char *f[MAXF + 1], *l, *names = NULL;
    int64_t *at = NULL;
    float *xy = NULL;
    long n;
    if (!(l = next_line(t, "'attnlab-coords 1'", err))) goto fail;
    if (strcmp(l, "attnlab-coords 1")) { al_seterr(err, "%s:%ld: not a coordinates file (the first line must be 'attnlab-coords 1')", PATH, t->line); goto fail; }
    if (!(l = next_line(t, "the 'molecules' line", err))) goto fail;
    if (fields(l, f) != 2 || strcmp(f[0], "molecules")) { al_seterr(err, "%s:%ld: expected 'molecules COUNT'", PATH, t->line); goto fail; }
    if (get_int(t, f[1], "molecule count", 1, 0x7ffffffe, &n, err)) goto fail;
    if (n != ms->nmol) { al_seterr(err, "%s:%ld: %ld molecules, but molecules.txt has %d", PATH, t->line, n, ms->nmol); goto fail; }
    if (lines - t->line < ms->nmol + ms->natoms) {
        al_seterr(err, "%s: %lld lines, too few for %d molecules of %lld atoms", PATH, (long long)lines, ms->nmol, (long long)ms->natoms);
        goto fail;
    }
    if (al_mem_check(al_size_add(al_size_add((uint64_t)t->len + 1, al_size_mul((uint64_t)ms->nmol, 8)), al_size_mul((uint64_t)ms->natoms, 8)),
                     err, "%s: names and coordinates", PATH))
        goto fail;
    names = malloc(t->len + 1); at = malloc((size_t)ms->nmol * sizeof *at); xy = malloc((size_t)ms->natoms * 2 * sizeof *xy);
    if (!names || !at || !xy) { al_seterr(err, "%s: out of memory", PATH); goto fail; }
    for (int m = 0; m < ms->nmol; m++) {
        at[m] = used;
        if (read_name_line(ms, t, m, names, &used, err)) goto fail;
        for (int64_t a = ms->atom_start[m]; a < ms->atom_start[m + 1]; a++) if (read_xy(t, xy + 2 * a, err)) goto fail;
    }
    while ((l = al_text_line(t)) != NULL)
        if (*al_text_skip_ws(l)) { al_seterr(err, "%s:%ld: unexpected line after the %d molecules", PATH, t->line, ms->nmol); goto fail; }
    al_text_close(t);
    free(ms->names); free(ms->name_at); free(ms->xy);
    ms->names = names; ms->name_at = at; ms->xy = xy;
    return AL_OK;
fail:
    al_text_close(t);
    free(names); free(at); free(xy);
    return AL_ERR;
}

const char *al_molset_name(const al_molset *ms, int m)
{
    return ms->names && m >= 0 && m < ms->nmol ? ms->names + ms->name_at[m] : NULL;
}

int al_molset_find(const al_molset *ms, const char *name_or_index)
{
    for (int m = 0; ms->names && m < ms->nmol; m++)
        if (!strcmp(ms->names + ms->name_at[m], name_or_index)) return m;
    char *e;
    errno = 0;
    long v = strtol(name_or_index, &e, 10);
    return e != name_or_index && !*e && !errno && v >= 0 && v < ms->nmol ? (int)v : -1;
}

/* A split file of molecule numbers; mark[m] = which split (1-based) holds it, for overlap checks. */
static al_status read_split(al_molset *ms, const char *dir, int which, uint8_t *mark, long *mline, int **out, int *count, al_error *err)
{
    static const char *names[] = {"", "train.idx", "val.idx", "test.idx"};
    al_text tt, *t = &tt;
    if (al_text_open(t, dir, names[which], err)) return AL_ERR;
    int64_t lines = al_text_count_lines(t);
    if (lines > ms->nmol) { al_seterr(err, "%s: %lld lines but only %d molecules", PATH, (long long)lines, ms->nmol); al_text_close(t); return AL_ERR; }
    int *ids = malloc((size_t)(lines > 0 ? lines : 1) * sizeof *ids);
    if (!ids) { al_text_close(t); return al_seterr(err, "%s: out of memory", PATH); }
    int k = 0; char *l, *f[MAXF + 1];
    while ((l = al_text_line(t)) != NULL) {
        long v;
        int n = fields(l, f);
        if (n != 1) { al_seterr(err, "%s:%ld: expected one molecule number, got %d fields", PATH, t->line, n > MAXF ? MAXF + 1 : n); goto fail; }
        if (get_int(t, f[0], "molecule number", 0, ms->nmol - 1, &v, err)) goto fail;
        if (mark[v] == which) { al_seterr(err, "%s:%ld: molecule %ld listed twice (first on line %ld)", PATH, t->line, v, mline[v]); goto fail; }
        if (mark[v]) { al_seterr(err, "%s:%ld: molecule %ld is also in %s (line %ld)", PATH, t->line, v, names[mark[v]], mline[v]); goto fail; }
        mark[v] = (uint8_t)which; mline[v] = t->line;
        ids[k++] = (int)v;
    }
    if (k == 0) { al_seterr(err, "%s: empty (no molecules)", PATH); goto fail; }
    *out = ids; *count = k;
    al_text_close(t);
    return AL_OK;
fail:
    free(ids); al_text_close(t);
    return AL_ERR;
}

al_status al_molset_load(al_molset *ms, const char *dir, al_error *err)
{
    memset(ms, 0, sizeof *ms);
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) return al_seterr(err, "molecules: %s: no such directory", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/molecules.txt", dir);
    if (al_molset_read(ms, path, err)) return AL_ERR;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (size_t L = strlen(tmp); L > 1 && tmp[L - 1] == '/'; L--) tmp[L - 1] = 0;
    const char *base = strrchr(tmp, '/');
    snprintf(ms->name, sizeof ms->name, "%s", base ? base + 1 : tmp);
    uint8_t *mark = calloc((size_t)ms->nmol, 1);
    long *mline = calloc((size_t)ms->nmol, sizeof *mline);
    al_status st = AL_ERR;
    if (!mark || !mline) al_seterr(err, "molecules: out of memory");
    else if (!read_split(ms, dir, 1, mark, mline, &ms->train, &ms->ntrain, err) &&
             !read_split(ms, dir, 2, mark, mline, &ms->val, &ms->nval, err) &&
             !read_split(ms, dir, 3, mark, mline, &ms->test, &ms->ntest, err))
        st = AL_OK;
    free(mark); free(mline);
    snprintf(path, sizeof path, "%s/coords.txt", dir);
    if (st == AL_OK && access(path, F_OK) == 0) st = al_molset_read_coords(ms, path, err);   /* optional */
    if (st) al_molset_free(ms);
    return st;
}

al_status al_molset_train_frac(al_molset *ms, double frac, uint64_t seed, al_error *err)
{
    if (!(frac > 0 && frac <= 1)) return al_seterr(err, "molecules: training fraction %g outside (0, 1]", frac);
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    al_rng_shuffle(&r, ms->train, ms->ntrain);
    long keep = lround(frac * ms->ntrain);
    ms->ntrain = keep < 1 ? 1 : (int)keep;
    return AL_OK;
}

void al_molset_free(al_molset *ms)
{
    free(ms->atom_start); free(ms->bond_start); free(ms->y);
    free(ms->elem); free(ms->degree); free(ms->hs); free(ms->arom); free(ms->ring); free(ms->charge);
    free(ms->bond_i); free(ms->bond_j); free(ms->bond_type);
    free(ms->train); free(ms->val); free(ms->test);
    free(ms->names); free(ms->name_at); free(ms->xy);
    memset(ms, 0, sizeof *ms);
}

al_status al_molset_use_elements(al_molset *ms, const char *list, al_error *err)
{
    char names[AL_MOL_MAX_ELEMENTS][4] = {{0}};
    int n = 0, map[AL_MOL_MAX_ELEMENTS];
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, " ");
        if (l == 0) { p++; continue; }
        if (l > 3 || n == AL_MOL_MAX_ELEMENTS) return al_seterr(err, "element list '%.80s': more than %d elements or a symbol over 3 letters", list, AL_MOL_MAX_ELEMENTS);
        memcpy(names[n], p, l); names[n][l] = 0;
        for (int k = 0; k < n; k++)
            if (!strcmp(names[k], names[n])) return al_seterr(err, "element list '%.80s': %s twice", list, names[n]);
        n++; p += l;
    }
    if (n == 0) return al_seterr(err, "element list is empty");
    for (int e = 0; e < ms->nelem; e++) {
        map[e] = -1;
        for (int k = 0; k < n; k++) if (!strcmp(ms->elements[e], names[k])) map[e] = k;
    }
    for (int64_t a = 0; a < ms->natoms; a++)
        if (map[ms->elem[a]] < 0) {
            int m = 0;
            while (ms->atom_start[m + 1] <= a) m++;
            return al_seterr(err, "molecule %d has %s, which is not among the model's elements (%s)", m, ms->elements[ms->elem[a]], list);
        }
    for (int64_t a = 0; a < ms->natoms; a++) ms->elem[a] = (uint8_t)map[ms->elem[a]];
    memcpy(ms->elements, names, sizeof names);
    ms->nelem = n;
    return AL_OK;
}

al_status al_molset_resolve(const char *name, char *out, size_t n, al_error *err)
{
    if (!name || !*name) return al_seterr(err, "molecules: empty dataset name");
    return al_data_resolve(name, out, n, err);
}

void al_mol_atom_features(const al_molset *ms, int64_t a, float *out)
{
    const int E = ms->nelem;
    for (int e = 0; e < E; e++) out[e] = 0.f;
    out[ms->elem[a]] = 1.f;
    out[E] = (float)ms->degree[a] / 4.f;
    out[E + 1] = (float)ms->hs[a] / 3.f;
    out[E + 2] = (float)ms->arom[a];
    out[E + 3] = (float)ms->ring[a];
    out[E + 4] = (float)ms->charge[a];
}
