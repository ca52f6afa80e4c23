// SPEC §3's example, verbatim: the package Robots with Link, and the model
// Chain. Shared by the parser and sema tests so both test the same text.
#pragma once

namespace capstan::test {

inline constexpr const char* kSpecChain = R"(package Robots "description"
  model Link "one link of a chain"
    parameter Real L(unit = "m", min = 0) = 1.0 "length";
    parameter Real m(unit = "kg") = 1.0;
    Capstan.Body body(mass = m, com = {0, -L/2, 0},
                      inertia = diagonal({m*L^2/12, 1e-4, m*L^2/12}));
    Capstan.FixedTranslation tip(r = {0, -L, 0});
  equation
    connect(body.frame_a, tip.frame_a);
  end Link;
end Robots;

model Chain
  import Capstan.*;
  parameter Integer n = 5;
  World world(gravity = {0, -9.81, 0});
  Robots.Link link[n](each L = 0.5);
  Revolute joint[n](each axis = {0, 0, 1});
equation
  connect(world.frame_b, joint[1].frame_a);
  for i in 1:n loop
    connect(joint[i].frame_b, link[i].body.frame_a);
  end for;
  for i in 1:n-1 loop
    connect(link[i].tip.frame_b, joint[i+1].frame_a);
  end for;
  joint[1].tau = -2.0 * joint[1].u;           // a force law: explicit, causal
end Chain;
)";

}  // namespace capstan::test
