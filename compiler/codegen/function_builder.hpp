// One generated member function as the IR describes it (docs/ir.md): its
// signature, locals and blocks of straight-line statements printed from
// traced expressions, each block headed by the model element it comes from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "symbolic/printer.hpp"

namespace capstan::codegen {

// `base[i]` and `base(r, c)`: the spelling of vector and matrix entries.
inline std::string index(const std::string& base, int i) { return base + "[" + std::to_string(i) + "]"; }
inline std::string index2(const std::string& base, int r, int c) {
  return base + "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
}

// Weighted cost of straight-line code: a division (or a call) counts as
// about four multiplications.
inline double weightedCost(const symbolic::OpCount& ops) {
  return static_cast<double>(ops.adds + ops.muls + ops.other) + 4.0 * static_cast<double>(ops.divs + ops.funcs);
}

// A function's `operations` in the IR (its doc comment's closing count).
inline std::string operationsText(const symbolic::OpCount& ops) {
  return std::to_string(ops.adds) + " adds, " + std::to_string(ops.muls) + " muls, " + std::to_string(ops.divs) +
         " divs, " + std::to_string(ops.funcs) + " calls, " + std::to_string(ops.other) + " other";
}

// Functions are emitted in parts of about this many weighted operations
// (FunctionBuilder): small enough for g++ to allocate registers quickly.
// Parts cost about 5-8 % of run time (their shared values live in memory,
// where the compiler must assume stores through the outputs may change
// them), so forwardDynamics, the function simulation spends its time in,
// gets twice the budget: every peer model up to 30 dofs stays one function,
// and the 50-link chain's compiles in two parts.
constexpr double kPartBudget = 8000;
constexpr double kForwardDynamicsPartBudget = 2 * kPartBudget;

// From this many speeds on, forwardDynamics lets clang fuse a multiply and
// an add across statements (`#pragma clang fp contract(fast)` in its body,
// the IR's "fused"; g++ does so by default): clang's default fuses only
// within one expression, and the generated code has one operation per
// statement. Measured on an AMD EPYC (Zen 2) and an Intel Xeon machine
// (docs/performance.md, "Fused multiply-adds in forwardDynamics"): 10-25 %
// faster on both from 20 speeds up; below, where the code is a short chain
// of dependent sums, a fused multiply-add's longer latency made arm7 45 %
// slower on the AMD machine. The derivatives are not fused (slower there).
constexpr int kFusedMinSpeeds = 20;

// From this many speeds on, forwardDynamics by ABA in joint frames is
// emitted as calls of shared per-body steps (codegen/steps.hpp): past the
// 32 KiB instruction cache, straight-line code is fetched from L2 on every
// call (docs/performance.md, "Shared steps"). From 20 at first; paired,
// the 10- and 15-link chains' forwardDynamics are 1.28x and 1.33x faster
// as steps (docs/performance.md, "Steps below 20 dofs"). (Where CRBA
// traces cheaper, as on the 7-dof arm, there are no steps.)
constexpr int kSharedStepsMinSpeeds = 10;

// From this many speeds on, inverseDynamicsDerivatives is emitted as calls
// of shared steps (codegen/steps.hpp), its pair terms summed by the loop
// over the dof tree (trace.hpp's kMaxUnrolledDerivativePairs, which would
// trace them below 16 links, yields to it), for models without force
// elements or cables. Paired, clang++ -O2 -march=native, AMD EPYC
// (docs/performance.md, "Steps below 20 dofs"): 1.5-2.1x faster on the 5-,
// 10- and 15-link chains, the 7-dof arm, two 7-dof arms and two 6-dof legs
// (the arm's traced function was 56 KB of machine code, past the 32 KiB
// instruction cache); 1.4x slower on the one-link pendulum.
constexpr int kSharedDerivativeStepsMinSpeeds = 5;

// From this many speeds on, where inverseDynamicsDerivatives is shared
// steps, forwardDynamicsDerivatives is composed of forwardDynamics and it
// (with M^-1 traced on its own while small, trace.cpp's
// kMaxTracedInverseWork) rather than traced whole: paired, 1.0-1.37x as
// fast on the 10- and 15-link chains, two arms and two legs, as fast on
// the 7-dof arm; 0.93x on the 5-link chain, whose traced function is small.
constexpr int kComposedDerivativesMinSpeeds = 7;

// The table of sin and cos of q[0] ... q[size - 1]
// (capstan_models::sinCosTable) that CppPrinter::Options::sinCosTable reads
// is used where the angles among those coordinates are at least one in
// this many (and two or more). A table of 50 costs about what 6 to 8 calls
// of glibc's sincos do with AVX (0.086-0.093 us), 25 to 50 with SSE2 alone
// (0.38 us clang++, 0.53 us g++, which keeps it scalar; docs/performance.md,
// "sines and cosines at once"); the calls also make the compiler keep live
// values in memory around them.
constexpr int kSinCosTableDensity = 4;  // angles * 4 >= size

// The name of the table, and the statements that declare and fill it (with
// q the function's `const Q& q`).
inline const char* const kSinCosTable = "trig";
std::vector<std::string> sinCosTableLines(int size);

// The generated code's printer options: sin and cos of one angle from one
// call, or from the table for q[i] with i < tableSize (0: none).
inline symbolic::CppPrinter::Options sinCosOptions(int tableSize) {
  symbolic::CppPrinter::Options options;
  options.pairSinCos = true;
  if (tableSize > 0) {
    options.sinCosTable = kSinCosTable;
    options.sinCosTableSize = tableSize;
  }
  return options;
}

// One generated member function: its signature, local declarations, blocks
// of straight-line statements (each headed by the model element it came
// from) and closing statements.
//
// A function whose code grows past a budget is emitted in parts:
// consecutive runs of blocks, each a non-inlined member of a workspace
// struct that holds the function's locals and the temporaries one part
// computes and a later one reads. g++ allocates registers in time
// superlinear in a function's size, so parts keep the compile time of large
// models near linear; the printed code, and so the operation count, is the
// same either way.
class FunctionBuilder {
 public:
  using Assignment = symbolic::Assignment;
  using CppPrinter = symbolic::CppPrinter;
  using Expr = symbolic::Expr;
  using json = nlohmann::json;

  FunctionBuilder(std::string name, std::string returnType, std::string params, std::vector<std::string> doc);

  // A local declaration (a workspace member when the function is split).
  // Its name is the declaration's last word before `;` or ` =`; a local
  // none of whose entries a later block reads is not declared (print()).
  void local(const std::string& declaration);
  // A statement the function runs first (on its parameters).
  void opening(const std::string& statement) { fn_["opening"].push_back(statement); }
  void closing(const std::string& statement) { fn_["epilogue"].push_back(statement); }
  // `return <local>;` at the end (`return w.<local>;` when split).
  void returns(const std::string& local) { returned_ = local; }
  // A local that closing statements read as a whole (`llt($M)`): every
  // entry a block stores into it is kept, as for an output. In closing
  // statements `$name` names a local: `w.name` when the function is split.
  void readAtEnd(const std::string& local) { readAtEnd_.insert(local); }
  // Start a new part at the next block once a part has cost `budget`
  // (default kPartBudget).
  void splitAt(double budget) { partBudget_ = budget; }
  // Lets the blocks read sin and cos of the coordinates q[0] ... q[nq - 1]
  // (a parameter `const Q& q`) from a table the function fills first
  // (sinCosTableLines): decided when the first blocks are printed, for
  // angles dense enough among the coordinates that computing them all at
  // once beats a call each (kSinCosTableDensity). 0: calls.
  void allowSinCosTable(int nq) { tableCoordinates_ = nq; }
  // The table of sin and cos of q[0] ... q[size - 1] filled first whether or
  // not a block reads it (code merged into the function reads it).
  void requireSinCosTable(int size) { tableRequired_ = std::max(tableRequired_, size); }

  // Adds `outputs` as one block; later blocks refer to its targets by name.
  // Printing waits for the last block (ops() or finish()), so each block
  // knows what later ones reuse.
  void block(const std::string& comment, std::vector<Assignment> outputs);

  // Where a value is stored: the function, the comment of its block (the
  // model element it comes from) and its target (`M(0, 1)`), so that what
  // a rewrite takes out of it can be named after it.
  struct ValueSite {
    std::string function, comment, target;
  };
  // Rewrites every block's values before they are printed (all blocks
  // pending at once, in order, with their sites): the parameter hoisting of
  // derived.hpp.
  using Rewrite = std::function<void(std::vector<Expr>& values, const std::vector<ValueSite>& sites)>;
  void rewriteValues(Rewrite rewrite) { rewrite_ = std::move(rewrite); }

  void set(const std::string& key, json value) { fn_[key] = std::move(value); }
  const symbolic::OpCount& ops();

  json finish();

  // Lays out a finished function's code for a reader (after every rename of
  // its text, such as Derived's fields): each run of zero stores into
  // consecutive entries of an output vector becomes one segment's
  // setZero(), statements longer than 100 columns are broken after a `+` or
  // `-`, the workspace's list of carried temporaries is split into
  // declarations of at most 100 columns, and a declaration or statement
  // whose trailing comment would pass 100 columns gets it on the line above.
  static void layOut(json& function);

 private:
  // Moves the blocks into parts, the locals into the workspace, and there
  // too every temporary that a later part reads (the printer reports each
  // block's declared and reused temporaries).
  void splitIntoParts();

  struct Pending {
    std::string comment;
    std::vector<Assignment> outputs;
  };

  // The local an assignment's target names (`R_WLink2Body` of
  // `R_WLink2Body(0, 1)`), or "" for an output of the function.
  std::string localOf(const std::string& target) const;

  // The printed code's own dead stores: a store to an entry of a local
  // (`a_KUpper[3] = t26;`) that no later line reads, and then a temporary
  // (`const double t26 = ...;`) that no line kept reads. dropDeadStores()
  // works on the traced values and finds most; this finds what it cannot
  // see: a second local entry holding a value another name already gives
  // later blocks, and a value whose later uses the printer reads through a
  // temporary of an enclosing expression. Straight-line code, so one pass
  // from the last line back decides each line. The same pass knows which of
  // a block's temporaries later blocks read, and puts each block's kept
  // statements in an order that keeps fewer values live
  // (symbolic::scheduleStatements, those temporaries and the outputs as
  // roots).
  void dropUnreadLines();

  // The pending blocks' values, block by block.
  std::vector<std::vector<Expr>> pendingRoots() const;
  // symbolic::lastUses of the pending blocks' values.
  std::unordered_map<std::uint32_t, std::size_t> lastUses() const;

  // Drops dead stores: an entry of a local that no later block reads (a
  // constant or a symbol, which later blocks print as themselves, never
  // counts as read), and what only dropped stores read, in one pass from
  // the last block back. Then declares the locals still written.
  void dropDeadStores();

  // Prints the pending blocks (after rewrite_, then dropDeadStores()).

  void print();

  CppPrinter printer_{sinCosOptions(0)};
  int tableCoordinates_ = 0;  // allowSinCosTable
  int tableSize_ = -1;         // the table the printer reads (0: none), once decided
  bool tableRead_ = false;     // a printed block reads it
  int tableRequired_ = 0;      // requireSinCosTable
  Rewrite rewrite_;
  json fn_;
  std::vector<Pending> pending_;
  std::vector<json> parts_;
  std::vector<std::vector<std::vector<CppPrinter::Temporary>>> declared_;  // by part, by block
  std::vector<std::set<std::string>> reused_;                             // by part
  std::set<std::uint32_t> named_;
  symbolic::OpCount ops_, partOps_;
  double partBudget_ = kPartBudget;
  std::string returned_;
  std::set<std::string> readAtEnd_;
  std::vector<std::pair<std::string, std::string>> locals_;  // (name, declaration), until printed
  std::unordered_set<std::string> pendingLocals_;             // locals_' names (localOf)
  std::set<std::string> localNames_;                          // every local's name
};

}  // namespace capstan::codegen
