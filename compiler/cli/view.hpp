// `capstan view` and `capstan simulate ... --view`: the self-contained HTML
// page of a model's motion (cli/view.cpp, docs/view.md).
#pragma once

#include "cli/options.hpp"

namespace capstan::cli {

// `capstan view FILE [TRAJ.csv] -o page.html`: the trajectory's page; without
// TRAJ.csv, of a run that `capstan simulate` with the same options makes.
int view(const Options& opts);
// `capstan simulate ... --view page.html`: the run, then its page (the CSV
// still goes to -o when given; without -o it is not printed).
int simulateWithView(const Options& opts);

}  // namespace capstan::cli
