/*
 * tau_like_app: an MPI application that writes its trace the way TAU's
 * ADIOS2 plugin does (one stream per rank, <prefix>-tau_like_app-<rank>.bp,
 * variables timer_event_count / event_timestamps [n x 6], attributes
 * "timer <i>", "event_type <i>", "MetaData:<rank>:<tid>:<key>").
 *
 * Each rank loops: main > step > { solve x K, MPI_Allreduce }. solve takes
 * 1000 us +/- a little; every 40th call of rank 1 takes 20000 us (the
 * injected anomalies, listed in <dir>/truth-tau_like_app.csv by rank 0).
 * Timestamps come from a synthetic clock, so runs are fast and exact.
 *
 * It splits MPI_COMM_WORLD by MPI_APPNUM and uses only its own
 * communicator, so it can share one mpirun with chimbuko-mpi (MPMD).
 *
 *   tau_like_app DIR STEPS CALLS_PER_STEP [ENGINE]
 */
#include <adios2_c.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ENTRY = 0, EXIT = 1 };
enum { F_MAIN = 0, F_STEP = 1, F_SOLVE = 2, F_ALLREDUCE = 3 };
static const char *FUNCTIONS[] = {"main", "step", "solve", "MPI_Allreduce"};

#define T0 1700000000000000ULL

typedef struct {
    uint64_t *rows;
    size_t n, cap;
} Rows;

static void push(Rows *r, uint64_t rank, uint64_t et, uint64_t f, uint64_t ts) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->rows = realloc(r->rows, r->cap * 6 * sizeof(uint64_t));
        if (!r->rows) {
            fprintf(stderr, "tau_like_app: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    uint64_t *row = r->rows + 6 * r->n++;
    row[0] = 0;    /* program (defunct in TAU output) */
    row[1] = rank; /* rank */
    row[2] = 0;    /* thread */
    row[3] = et;   /* event type index */
    row[4] = f;    /* function index */
    row[5] = ts;   /* timestamp, us */
}

static void check(adios2_error e, const char *what) {
    if (e != adios2_error_none) {
        fprintf(stderr, "tau_like_app: ADIOS2 %s failed (%d)\n", what, (int)e);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void attribute(adios2_io *io, const char *key, const char *value) {
    if (!adios2_define_attribute(io, key, adios2_type_string, value)) {
        fprintf(stderr, "tau_like_app: cannot define attribute %s\n", key);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: tau_like_app DIR STEPS CALLS_PER_STEP [ENGINE]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *dir = argv[1];
    const long steps = atol(argv[2]);
    const long calls = atol(argv[3]);
    const char *engine = argc > 4 ? argv[4] : "BP4";

    /* Our own communicator: the ranks of this program in an MPMD launch. */
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, flag ? *appnum : 0, 0, &comm);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    char path[4096];
    snprintf(path, sizeof path, "%s/tau-metrics-tau_like_app-%d.bp", dir, rank);
    adios2_adios *adios = adios2_init_serial();
    adios2_io *io = adios2_declare_io(adios, "tau-metrics");
    check(adios2_set_engine(io, engine), "set_engine");
    char key[256], value[256];
    for (int f = 0; f < 4; f++) {
        snprintf(key, sizeof key, "timer %d", f);
        attribute(io, key, FUNCTIONS[f]);
    }
    attribute(io, "event_type 0", "ENTRY");
    attribute(io, "event_type 1", "EXIT");
    snprintf(key, sizeof key, "MetaData:%d:0:Hostname", rank);
    gethostname(value, sizeof value);
    attribute(io, key, value);

    size_t shape[2] = {0, 6}, start[2] = {0, 0}, count[2] = {0, 6};
    adios2_variable *n_var = adios2_define_variable(io, "timer_event_count", adios2_type_uint64_t,
                                                    0, NULL, NULL, NULL, adios2_constant_dims_true);
    adios2_variable *rows_var =
        adios2_define_variable(io, "event_timestamps", adios2_type_uint64_t, 2, shape, start,
                               count, adios2_constant_dims_false);
    adios2_engine *w = adios2_open(io, path, adios2_mode_write);
    if (!n_var || !rows_var || !w) {
        fprintf(stderr, "tau_like_app: cannot open %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* The ground truth, written by rank 0 before any step so that a reader
     * finishing early finds it complete: the slow calls of the slow rank,
     * recomputed with the same synthetic clock. */
    FILE *truth = NULL;
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/truth-tau_like_app.csv", dir);
        truth = fopen(path, "w");
        if (truth)
            fprintf(truth, "rank,thread,step,function,entry_us,exit_us,inclusive_us,exclusive_us\n");
    }
    if (truth) {
        int slow_rank = 1 % size;
        uint64_t c2 = T0 + 1000 * (uint64_t)slow_rank;
        long k = 0;
        for (long s = 0; s < steps; s++) {
            if (s == 0)
                c2++;
            c2++;
            for (long c = 0; c < calls; c++, k++) {
                uint64_t runtime = 1000 + (uint64_t)((k * 7919) % 41) - 20;
                int slow = k % 40 == 39;
                if (slow)
                    runtime = 20000;
                if (slow)
                    fprintf(truth, "%d,0,%ld,solve,%llu,%llu,%llu,%llu\n", slow_rank, s,
                            (unsigned long long)c2, (unsigned long long)(c2 + runtime),
                            (unsigned long long)runtime, (unsigned long long)runtime);
                c2 += runtime + 5;
            }
            c2 += 32;
        }
        fclose(truth);
    }
    MPI_Barrier(comm);
    Rows r = {0};
    uint64_t clock = T0 + 1000 * (uint64_t)rank;
    long call = 0;
    for (long s = 0; s < steps; s++) {
        r.n = 0;
        if (s == 0)
            push(&r, rank, ENTRY, F_MAIN, clock++);
        push(&r, rank, ENTRY, F_STEP, clock++);
        for (long c = 0; c < calls; c++, call++) {
            uint64_t runtime = 1000 + (uint64_t)((call * 7919) % 41) - 20; /* 980..1020 us */
            int slow = rank == 1 % size && call % 40 == 39;
            if (slow)
                runtime = 20000;
            uint64_t entry = clock;
            push(&r, rank, ENTRY, F_SOLVE, entry);
            clock += runtime;
            push(&r, rank, EXIT, F_SOLVE, clock);
            clock += 5;
        }
        push(&r, rank, ENTRY, F_ALLREDUCE, clock);
        double mine = (double)rank, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
        clock += 30;
        push(&r, rank, EXIT, F_ALLREDUCE, clock++);
        push(&r, rank, EXIT, F_STEP, clock++);
        if (s == steps - 1)
            push(&r, rank, EXIT, F_MAIN, clock++);

        uint64_t n = r.n;
        shape[0] = count[0] = r.n;
        check(adios2_begin_step(w, adios2_step_mode_append, -1.0, &(adios2_step_status){0}),
              "begin_step");
        check(adios2_set_shape(rows_var, 2, shape), "set_shape");
        check(adios2_set_selection(rows_var, 2, start, count), "set_selection");
        check(adios2_put(w, n_var, &n, adios2_mode_sync), "put count");
        check(adios2_put(w, rows_var, r.rows, adios2_mode_sync), "put rows");
        check(adios2_end_step(w), "end_step");
    }
    check(adios2_close(w), "close");
    adios2_finalize(adios);

    free(r.rows);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
