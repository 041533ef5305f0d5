/* glossary.c: every symbol of the course, one name per quantity, and the lesson defining it.
 *
 * One entry per symbol as the players and the lessons' words show it. `lesson` is the first
 * lesson of lessons/course.txt that says in words what the symbol is; tests/check_course.c walks
 * the course and fails when a lesson shows a symbol before that lesson, or when the defining
 * lesson does not show it. docs/glossary.md lists the same entries (the same test compares them).
 * The documents' own names for these quantities (000's s and "correction", 002's l_i, …) are
 * mentioned once, where each document's first lesson starts, and are not entries here.
 */
#include "lesson.h"

#define OPEN "000_00_four_numbers"

static const fs_glossary_entry entries[] = {
    /* the opening lesson: one query, four keys in two blocks */
    {"Q", "Q", "the queries, one row per query position; \"Q 0\" in a tile's name is Q tile 0", OPEN},
    {"K", "K", "the keys, one row per key position; a query's score against key j is scale · q · K[j]", OPEN},
    {"V", "V", "the values, one row per key position; the output mixes these rows", OPEN},
    {"s", "s", "one query row's scores inside one tile (a row of S)", OPEN},
    {"m", "m", "the running maximum: the largest score of the row seen so far", OPEN},
    {"ℓ", "l", "the running sum: Σ exp(score − m) over the keys seen so far, measured against the current m", OPEN},
    {"m_old", "m_old", "m before the current step", OPEN},
    {"ℓ_old", "l_old", "ℓ before the current step", OPEN},
    {"m_blk", "m_blk", "the largest visible score in the block (tile, chunk, split) being folded in", OPEN},
    {"ℓ_blk", "l_blk", "Σ exp(s − m_blk) over the visible scores of that block", OPEN},
    {"m_new", "m_new", "m after the step: max(m_old, m_blk)", OPEN},
    {"ℓ_new", "l_new", "ℓ after the step: α · ℓ_old + β · ℓ_blk", OPEN},
    {"α", "alpha", "exp(m_old − m_new): rescales what was summed before; below 1 when the maximum moves up", OPEN},
    {"β", "beta", "exp(m_blk − m_new): rescales the new block's sum and output; below 1 when the block's maximum is not the new m", OPEN},
    {"o", "o", "one query row's running output: the exp(score − m)-weighted sum of the value rows seen so far (divided by ℓ at the end, or kept divided in the normalized form)", OPEN},
    {"O", "O", "the output: row i is the softmax-weighted average of V's rows for query i", OPEN},
    /* softmax and attention */
    {"z", "z", "the vector whose softmax is taken, one number per position", "000_01_online_softmax"},
    {"q", "q", "one query: a row of Q", "000_02_online_attention"},
    {"d", "d", "the length of one query or key row (the head dimension)", OPEN},
    {"n", "n", "the number of positions of one head: its queries and its keys", "001_07_online_softmax_elements"},
    {"Bq", "Bq", "the number of query rows in one tile", OPEN},
    {"Bk", "Bk", "the number of keys in one tile", OPEN},
    {"S", "S", "the score matrix scale · Q Kᵀ, one score per query and key, before the softmax", OPEN},
    {"P", "P", "the attention weights: S after the softmax, row by row (inside a tile, exp(s − m) before the division by ℓ)", "001_01_memory_wall"},
    {"N", "N", "the sequence length as 001 and 002 write it (004 once): the course's n", "001_07_online_softmax_elements"},
    {"tile class", "tile class", "full, partial or skipped: what the mask leaves visible of a tile, decided before any arithmetic (full: every pair; partial: some, each then tested; skipped: none, nothing of the tile read)", OPEN},
    {"scale", "scale", "the number every score q · k is multiplied by: 1/√d unless the lesson says otherwise", OPEN},
    {"P̃", "P~", "a block's own weights exp(s − m_blk), measured from the block's maximum before β rescales them", "001_02_row0_walk"},
    {"W", "W", "a sliding window's width: query i sees keys i − W + 1 … i", "001_16_pitfall_masked_doc_fix"},
    /* counting and modelling (the lessons past the documents) */
    {"HBM", "HBM", "high-bandwidth memory: the GPU's large off-chip memory that holds Q, K, V and O; every number a kernel reads or writes there costs time", "000_10_memory_traffic"},
    {"SRAM", "SRAM", "the GPU's small, fast on-chip memory (shared memory), where a tile's numbers live while the arithmetic runs", "000_10_memory_traffic"},
    {"FLOP", "FLOP", "one floating-point operation (an addition or a multiplication; a multiply-add counts two); FLOPs, their count; FLOP/s, their rate", "beyond_02_roofline"},
    {"SM", "SM", "a streaming multiprocessor: one of the many processors a GPU is made of, each with its own SRAM; a tile's work runs on one", "001_05_hardware"},
    {"M", "M", "the on-chip memory (SRAM) the tiles must fit in, counted in numbers", "beyond_01_io_complexity"},
    {"I", "I", "arithmetic intensity: the FLOPs a kernel does per byte it moves to and from HBM", "beyond_02_roofline"},
    {"J", "J", "the softmax's Jacobian for one row: J = diag(P) − Pᵀ P, the derivative of each weight by each score", "beyond_04_softmax_jacobian"},
    /* decoding */
    {"split", "split", "a run of cached keys that one worker reduces to a partial (m, ℓ, o) when decoding", "004_03_two_blocks_merge"},
    /* the backward pass */
    {"L", "L", "the log-sum-exp m + ln ℓ of a query row: the one number per row the forward keeps for the backward", "000_11_backward_n6"},
    {"D", "D", "the backward's rowsum(dO ∘ O) of a query row", "000_11_backward_n6"},
    {"dO", "dO", "the gradient of the loss with respect to O, the backward's input", "000_11_backward_n6"},
    {"dP", "dP", "the gradient with respect to P: dO · Vᵀ", "000_11_backward_n6"},
    {"dS", "dS", "the gradient with respect to S: P ∘ (dP − D)", "000_11_backward_n6"},
    {"dQ", "dQ", "the gradient with respect to Q: scale · dS · K, summed over the tiles", "000_11_backward_n6"},
    {"dK", "dK", "the gradient with respect to K: scale · dSᵀ · Q, summed over the tiles", "000_11_backward_n6"},
    {"dV", "dV", "the gradient with respect to V: Pᵀ · dO, summed over the tiles", "000_11_backward_n6"},
    /* past one GPU */
    {"device", "device", "one simulated GPU of the ring; it keeps its own queries the whole time", "ring_01_four_devices_causal_n8"},
    {"shard", "shard", "the keys and values of one device's positions, passed around the ring", "ring_01_four_devices_causal_n8"},
    {"ring step", "ring step", "one round of the ring: every device computes with the shard it holds, then passes it on", "ring_01_four_devices_causal_n8"},
    {"hop", "hop", "one shard's move from a device to the next in the ring", "ring_01_four_devices_causal_n8"},
    /* low precision */
    {"e4m3", "e4m3", "an 8-bit float with 4 exponent and 3 fraction bits, largest 448", "004_09_fp8_e4m3"},
    {"e5m2", "e5m2", "an 8-bit float with 5 exponent and 2 fraction bits, largest 57344", "004_09_fp8_e4m3"},
    {"subnormal", "subnormal", "a float below its format's smallest power of two (2^-6 for e4m3), kept with fewer significant bits", "004_09_fp8_e4m3"},
    {"σ", "sigma", "a low-precision tensor's scale factor, amax / 448 for e4m3: the stored number times σ is the value (σ_q, σ_k, σ_v for Q, K, V)", "004_10_fp8_block_scaling"},
    {"descale", "descale", "the factor that turns a tensor's stored low-precision numbers back into its values (its σ)", "004_10_fp8_block_scaling"},
    {"amax", "amax", "the largest absolute value among a tensor's (or a block's) entries, which sets its scale σ", "004_10_fp8_block_scaling"},
    {"P8", "P8", "the weights P as the low-precision product with V uses them: rounded to e4m3 (after the P scale, and shown divided by it again)", "004_10_fp8_block_scaling"},
    /* dropout */
    {"Z", "Z", "dropout's mask: 1 where a weight is kept, 0 where it is dropped", "002_03_dropout_forward"},
    /* the paged KV cache */
    {"page", "page", "a fixed-size piece of the KV cache holding the keys and values of a few consecutive positions", "002_04_paged_kv_cache"},
    {"block table", "block table", "a sequence's list mapping its logical blocks to physical pages", "002_04_paged_kv_cache"},
};

/* How many entries: the length of the table above. */
int fs_glossary_count(void) { return (int)(sizeof entries / sizeof entries[0]); }

/* Entry i (0 .. count − 1) of the table, in course order; NULL outside. */
const fs_glossary_entry *fs_glossary_get(int i)
{
    return i >= 0 && i < fs_glossary_count() ? &entries[i] : 0;
}
