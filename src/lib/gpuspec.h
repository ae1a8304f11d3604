/* gpuspec.h - the accelerator spec table (gpuspecs/gpus.tsv).
 *
 * One row per accelerator; see gpuspecs/README.md for the columns.  Numeric
 * values that the table gives as NA are NAN here.  Lookup is by canonical
 * name or any alias, ignoring case and every character that is not a letter
 * or digit ("Tesla_T4", "tesla t4" and "T4" name one row).
 */
#ifndef PN_GPUSPEC_H
#define PN_GPUSPEC_H

typedef struct {
	char *name, *aliases, *vendor, *arch, *cc, *mem_type, *bus, *source;
	double sms, cores, base_mhz, boost_mhz, mem_gb, mem_bus_bits,
		mem_bw_gbs, l2_mb, fp32_gflops, tf32_gflops, fp16_gflops,
		bf16_gflops, tdp_w, price_usd_h;
} pn_gpu;

typedef struct {
	int n;
	pn_gpu *g;
	char *path;
} pn_gpus;

/* The table to read: path if not NULL, else $PN_GPUSPECS, else
 * <dir of the executable>/../gpuspecs/gpus.tsv (build tree), else
 * <dir of the executable>/../share/pn/gpus.tsv (installed), else the
 * compiled-in PN_DATADIR/gpus.tsv. */
const char *pn_gpus_path(const char *path);

/* Load and validate the table; dies (exit 1) naming file, line and column
 * on a bad row:
 *   - a missing required value (name, sms, boost_mhz, mem_gb, mem_bw_gbs,
 *     l2_mb, fp32_gflops): "column 'sms': 'T4' needs a value";
 *   - a value that is not a number, or impossible (opt.h's messages): a
 *     count (sms, cores, mem_bus_bits) that is not a whole number of at
 *     least 1; a clock, memory size, bandwidth, L2 size or peak (fp32, and
 *     tf32/fp16/bf16 when given) that is not above 0; a TDP or price below 0:
 *     "column 'mem_bw_gbs': '0' is too small (must be above 0)";
 *   - a name or alias with no letter or digit (it could never be looked
 *     up): "column 'name': '-' has no letter or digit", or with a control
 *     character: "column 'aliases': a name with a control character (byte
 *     0x01)";
 *   - a name or alias that two rows share. */
pn_gpus *pn_gpus_load(const char *path);
void pn_gpus_free(pn_gpus *t);

/* The row named name (canonical or alias), or NULL. */
const pn_gpu *pn_gpus_find(const pn_gpus *t, const char *name);

/* Like pn_gpus_find, but an unknown name dies (exit 1) with "file:line:
 * unknown device 'x' in TABLE (closest: A, B, C); pass --gpuspecs FILE with
 * a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)";
 * file may be NULL (no place). */
const pn_gpu *pn_gpus_need(const pn_gpus *t, const char *name,
			   const char *file, long line);

/* Write into buf (size n) up to three names closest to name. */
void pn_gpus_closest(const pn_gpus *t, const char *name, char *buf,
		     size_t n);

#endif
