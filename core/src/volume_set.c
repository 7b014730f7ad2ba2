/*
 * A level's volume set (docs/spec/build3d-runtime.md §4.1-§4.2): names of the mesh-name form,
 * distinct, in bytewise ascending order, so that any history of edits applies the same
 * volumes in the same order. Sorting is stable so that a set with a repeated name is refused
 * naming the two in the order they were given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/rebuild.h"
#include "volumes_internal.h"

int op_volume_name_valid(const char *name)
{
    if (!name || name[0] == '\0' || name[0] == '.')
        return 0;
    for (int i = 0; i <= OP_MAX_VOLUME_NAME; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '\0')
            return 1;
        if (i == OP_MAX_VOLUME_NAME)
            return 0;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok)
            return 0;
    }
    return 0;
}

/* Bytewise (strcmp compares as unsigned char); names are terminated within the array. */
static int name_cmp(const op_volume *a, const op_volume *b)
{
    return strncmp(a->name, b->name, OP_MAX_VOLUME_NAME + 1);
}

void op__volume_order(const op_volume *v, int n, int32_t *idx, int32_t *tmp)
{
    for (int i = 0; i < n; i++)
        idx[i] = i;
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = name_cmp(&v[idx[j]], &v[idx[i]]) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

op_status op_volumes_sort(op_volume *vols, int nvols, op_err *err)
{
    if (nvols < 0 || nvols > OP_MAX_VOLUMES)
        return op_err_set(err, OP_ERANGE, "volumes: count %d outside [0, %d]", nvols,
                          OP_MAX_VOLUMES);
    if (nvols < 2)
        return OP_OK;
    if (!vols)
        return op_err_set(err, OP_EINVAL, "volumes: vols is NULL with nvols = %d", nvols);
    int32_t *idx = malloc((size_t)nvols * 2 * sizeof *idx);
    if (!idx)
        return op_err_set(err, OP_ENOMEM, "volumes: out of memory sorting %d volumes", nvols);
    int32_t *tmp = idx + nvols;
    op__volume_order(vols, nvols, idx, tmp);
    /* Permute in place along the cycles of idx: slot i receives vols[idx[i]]; tmp marks
     * slots already placed. Each volume is copied once (plus one per cycle). */
    memset(tmp, 0, (size_t)nvols * sizeof *tmp);
    for (int i = 0; i < nvols; i++) {
        if (tmp[i] || idx[i] == i)
            continue;
        op_volume hold = vols[i];
        int j = i;
        while (idx[j] != i) {
            vols[j] = vols[idx[j]];
            tmp[j] = 1;
            j = idx[j];
        }
        vols[j] = hold;
        tmp[j] = 1;
    }
    free(idx);
    return OP_OK;
}

op_status op_volumes_check(const op_volume *vols, int nvols, op_err *err)
{
    if (nvols < 0)
        return op_err_set(err, OP_EINVAL, "volumes: nvols = %d is negative", nvols);
    if (nvols > OP_MAX_VOLUMES)
        return op_err_set(err, OP_ERANGE, "volumes: count %d outside [0, %d]", nvols,
                          OP_MAX_VOLUMES);
    op_status st = op__volumes_validate(vols, nvols, err);
    if (st != OP_OK)
        return st;
    for (int i = 0; i < nvols; i++) {
        if (!op_volume_name_valid(vols[i].name))
            return op_err_set(err, OP_EINVAL,
                              "volumes: volume %d: name \"%.*s\" is not 1..%d bytes of "
                              "[A-Za-z0-9._-] not starting with '.'",
                              i, OP_MAX_VOLUME_NAME, vols[i].name, OP_MAX_VOLUME_NAME);
        if (i > 0 && name_cmp(&vols[i - 1], &vols[i]) >= 0)
            return op_err_set(err, OP_EINVAL,
                              "volumes: volume %d \"%s\" %s volume %d \"%s\": names must be "
                              "distinct and in ascending order",
                              i, vols[i].name,
                              name_cmp(&vols[i - 1], &vols[i]) == 0 ? "repeats" : "sorts before",
                              i - 1, vols[i - 1].name);
    }
    return OP_OK;
}
