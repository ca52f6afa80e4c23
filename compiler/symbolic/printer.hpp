// Straight-line C++ from expressions, and operation counts for reports.
//
// A CppPrinter is a session: it knows how symbols (and any other values
// already available to the generated code) are spelled, and remembers the
// temporaries of earlier blocks so later blocks can refer to them. Output
// depends only on the expressions and the calls made, never on addresses.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolic/expr.hpp"

namespace capstan::symbolic {

struct OpCount {
  std::size_t adds = 0;   // additions and subtractions
  std::size_t muls = 0;   // multiplications
  std::size_t divs = 0;   // divisions
  std::size_t funcs = 0;  // calls: sin, sqrt, pow, atan2, min, ...
  std::size_t other = 0;  // comparisons, logic, selects

  std::size_t total() const { return adds + muls + divs + funcs + other; }
  OpCount& operator+=(const OpCount& o);
  friend bool operator==(const OpCount&, const OpCount&) = default;
};

// The operations straight-line code for `roots` performs when every node is
// computed once (the way CppPrinter emits it). A base that two or more
// products divide by is inverted once (one division) and multiplied by.
OpCount countOperations(std::span<const Expr> roots, int maxMultiplyPower = 4);
std::string str(const OpCount& ops);  // "12 adds, 30 muls, 1 div, 2 funcs, 0 other"

// For blocks printed in this order, the index of the last block whose
// outputs depend on each node, by node id (a node no block uses is absent).
std::unordered_map<std::uint32_t, std::size_t> lastUses(const std::vector<std::vector<Expr>>& blockRoots);

// For blocks printed in this order, each sin(x) node's cos(x) node and each
// cos(x) node's sin(x) node, by node id, where the blocks use both.
std::unordered_map<std::uint32_t, const Node*> sinCosPartners(const std::vector<std::vector<Expr>>& blockRoots);

// The index i of a coordinate symbol `q[i]`, or -1 for any other node.
int coordinateIndex(const Node* n);
// The coordinates `q[i]` whose sine or cosine the roots read (their i, in
// order): what CppPrinter::Options::sinCosTable would serve.
std::vector<int> sinCosCoordinates(const std::vector<std::vector<Expr>>& blockRoots);
// Whether the roots read a coordinate `q[i]` other than as the argument of
// a sine or cosine (a table of them does not stand in for the coordinate).
bool readsCoordinatesOtherwise(const std::vector<Expr>& roots);

// A printed block's statements (CppPrinter::Block::code, one a line) in an
// order that keeps fewer values live at once. The printer names them in
// post-order, each output's operands before it but in operand order, so a
// sum of several products holds all of them until the last is done. Here,
// from each root in turn (an output, or a temporary `readLater` says later
// blocks read; in the order they came), depth first, a statement's
// operands come just before it, the one that needs the most registers
// first (Sethi and Ullman: a statement needs the largest of its operands'
// needs, sorted from the largest, plus their rank; at least one). Only the
// order changes, every statement still after the temporaries it reads: on
// chain20's forwardDynamics, 10 % fewer stack accesses in the machine code
// (docs/performance.md, "Statements ordered for registers").
std::string scheduleStatements(std::string_view code, const std::function<bool(std::string_view)>& readLater);

// The shortest C++ double literal that reads back as `v` exactly ("0.5",
// "2.0", "1e-07", "-3.25"); non-finite values use std::numeric_limits.
std::string formatDouble(double v);

struct Assignment {
  std::string target;  // an lvalue in the generated code: "M(0, 1)", "out.tau[2]"
  Expr value;
};

class CppPrinter {
 public:
  struct Options {
    // A subexpression used once is inlined unless it costs more operations
    // than this (then it gets a temporary, to keep lines readable).
    int maxInlineOps = 24;
    // x^n for |n| up to this is spelled as multiplications, else std::pow.
    int maxMultiplyPower = 4;
    // Later blocks refer to temporaries of earlier blocks instead of
    // recomputing them (the caller keeps those in scope).
    bool reuseTemporaries = true;
    // sin(x) and cos(x) that one block computes both of come from one
    // call, `const capstan_models::SinCos t0sc = capstan_models::sinCos(x);`
    // (the generated header defines it), read as `t0sc.sin` and `t0sc.cos`:
    // clang keeps std::sin and std::cos apart while they may set errno.
    // Off: std::sin and std::cos.
    bool pairSinCos = false;
    // With pairSinCos: the name of a table of capstan_models::SinCos, one
    // per coordinate, that the generated code fills before the block
    // (capstan_models::sinCosTable, all angles at once): sin and cos of a
    // coordinate symbol `q[i]` are then read from `<table>[i]`, one or both,
    // instead of a call, for i < sinCosTableSize. Empty: calls.
    std::string sinCosTable = {};
    int sinCosTableSize = 0;
  };

  CppPrinter();
  explicit CppPrinter(Options options);

  // Spells `e` as `spelling` (an atom: "q[3]", "p.link_2_body_mass",
  // "X_WUpper(0, 2)"). Symbols without a spelling are spelled by their name.
  void name(const Expr& e, std::string spelling);

  struct Temporary {
    std::string name;  // "t12", "tinv3"
    std::string type;  // "double" or "bool"
  };
  struct Block {
    std::string code;                  // one statement per line, each ending in '\n'
    OpCount ops;                       // operations in this block
    std::vector<Temporary> declared;   // this block's temporaries, in order
    std::vector<std::string> reused;   // earlier blocks' temporaries it reads
    bool readsTable = false;           // reads Options::sinCosTable
  };
  // `const double <prefix><n> = ...;` for shared subexpressions (n counts on
  // per prefix across the session), then `target = ...;` in the given order.
  // `usedLater` (optional) says which nodes a later block of the session
  // will use too: those get temporaries (and a base a later block divides
  // by, its reciprocal) even when this block uses them once, so no later
  // block recomputes them. lastUses() computes it for a list of blocks.
  // `partner` (optional, with Options::pairSinCos and `usedLater`): for a
  // sin(x) node the session's cos(x) node, and the reverse, or null; a
  // partner a later block uses is then computed here, in one call with its
  // pair. sinCosPartners() computes it for a list of blocks.
  Block block(std::span<const Assignment> outputs, std::string_view tempPrefix = "t",
              std::string_view indent = "", const std::function<bool(const Node*)>& usedLater = {},
              const std::function<const Node*(const Node*)>& partner = {});

  // Forget earlier blocks' temporaries (they went out of scope).
  void endScope() {
    temporaries_.clear();
    reciprocals_.clear();
  }

  // `e` as one C++ expression, with no temporaries (exponential on DAGs that
  // share much; for small expressions and messages).
  std::string expression(const Expr& e) const;

 private:
  struct Rendered;
  class Renderer;

  Options options_;
  std::unordered_map<std::uint32_t, std::string> names_;        // by node id
  std::unordered_map<std::uint32_t, std::string> temporaries_;  // by node id
  std::unordered_map<std::uint32_t, std::string> reciprocals_;  // names of 1/B, by B's node id
  std::unordered_map<std::string, std::size_t> nextIndex_;      // by prefix
};

}  // namespace capstan::symbolic
