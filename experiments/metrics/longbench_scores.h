// LongBench's per-sample scorers (THUDM/LongBench metrics.py), re-written:
// a prediction against one reference; a sample's score is the maximum over
// its references.
#ifndef DYNSPARSE_EXPERIMENTS_METRICS_LONGBENCH_SCORES_H_
#define DYNSPARSE_EXPERIMENTS_METRICS_LONGBENCH_SCORES_H_

#include <string>
#include <vector>

namespace dynsparse {

// SQuAD-style answer normalisation: lower-case, drop ASCII punctuation and
// the articles a/an/the, collapse whitespace.
std::string NormalizeAnswer(const std::string& s);

// qa_f1_score: token F1 of the normalised prediction and reference.
double QaF1Score(const std::string& prediction, const std::string& reference);

// rouge_score: ROUGE-L F1 (longest common subsequence of lower-cased
// whitespace tokens), as the `rouge` package's rouge-l "f".
double RougeLScore(const std::string& prediction, const std::string& reference);

// classification_score: 1/k when the reference is among the k class names
// found in the prediction (classes inside the reference, but not equal to
// it, do not count), else 0.
double ClassificationScore(const std::string& prediction,
                           const std::string& reference,
                           const std::vector<std::string>& all_classes);

// code_sim_score: the prediction's first line without '`', '#' or "//",
// compared with the reference by fuzz.ratio (Indel similarity,
// round(100 * 2 * LCS / (len a + len b))) / 100.
double CodeSimScore(const std::string& prediction,
                    const std::string& reference);

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_METRICS_LONGBENCH_SCORES_H_
