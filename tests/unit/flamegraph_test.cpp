// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// The folded-stack parser and the SVG flame graph renderer, checked through a
// real XML parser (pugixml).
#include "heapgate/flamegraph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <pugixml.hpp>
#include <string>
#include <vector>

namespace heapgate {
namespace {

// One drawn frame, as read back from the SVG.
struct Frame {
  std::string tip;
  double x = 0, y = 0, width = 0;
  std::string fill;
  std::string label;
};

struct Svg {
  pugi::xml_document doc;
  std::vector<Frame> frames;
  std::string text;  // every text element's content, joined by '\n'
};

// Parses `svg` strictly and collects its frames; a parse failure fails the test.
void parse_svg(const std::string& svg, Svg& out) {
  pugi::xml_parse_result parsed = out.doc.load_string(svg.c_str(), pugi::parse_default | pugi::parse_declaration);
  ASSERT_TRUE(parsed) << parsed.description() << " at offset " << parsed.offset << "\n" << svg;
  pugi::xml_node root = out.doc.child("svg");
  ASSERT_TRUE(root) << svg;
  EXPECT_STREQ(root.attribute("xmlns").value(), "http://www.w3.org/2000/svg");
  for (pugi::xml_node g : root.children("g")) {
    if (std::string(g.attribute("class").value()) != "hg-f") continue;
    Frame f;
    f.tip = g.child("title").text().get();
    pugi::xml_node rect = g.child("rect");
    EXPECT_TRUE(rect) << f.tip;
    f.x = rect.attribute("x").as_double();
    f.y = rect.attribute("y").as_double();
    f.width = rect.attribute("width").as_double();
    f.fill = rect.attribute("fill").value();
    f.label = g.child("text").text().get();
    out.frames.push_back(f);
  }
  for (pugi::xml_node t : root.children("text")) out.text += std::string(t.text().get()) + "\n";
}

const Frame* find_frame(const Svg& svg, const std::string& name) {
  for (const Frame& f : svg.frames) {
    if (f.tip.rfind(name + " (", 0) == 0) return &f;
  }
  return nullptr;
}

// "rgb(255,120,120)" → {255, 120, 120}.
std::vector<int> rgb_of(const std::string& fill) {
  std::vector<int> out;
  if (fill.rfind("rgb(", 0) != 0) return out;
  const char* p = fill.c_str() + 4;
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    out.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    p = end + 1;
  }
  return out;
}

FoldedStack stack(std::vector<std::string> frames, double value) { return FoldedStack{std::move(frames), value}; }

// --- parse_folded -------------------------------------------------------------

// A change graph as the HTML report draws it.
FlamegraphOptions short_options() {
  FlamegraphOptions options;
  options.short_labels = true;
  return options;
}

TEST(ParseFolded, ReadsStacksValuesAndSkipsBlankLines) {
  const std::string text =
      "main;parse;std::vector<char>::reserve(unsigned long) 4096\n"
      "main;f(int, char) -12\r\n"
      "\n"
      "   \t\n"
      "main 2.5\n"
      "main;g\t+7\n"
      "main;h 1e3  \n"
      "main;parse;std::vector<char>::reserve(unsigned long) 4096";  // no final newline, repeated stack
  auto parsed = parse_folded(text, "in.folded");
  ASSERT_TRUE(parsed) << parsed.error().message();
  const std::vector<FoldedStack> expected = {
      stack({"main", "parse", "std::vector<char>::reserve(unsigned long)"}, 4096),
      stack({"main", "f(int, char)"}, -12),
      stack({"main"}, 2.5),
      stack({"main", "g"}, 7),
      stack({"main", "h"}, 1000),
      stack({"main", "parse", "std::vector<char>::reserve(unsigned long)"}, 4096),
  };
  EXPECT_EQ(*parsed, expected);
  auto empty = parse_folded("", "empty.folded");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(ParseFolded, EachMalformedLineIsAnErrorNamingTheLine) {
  struct Case {
    const char* line;
    const char* what;  // a part of Error::what
  };
  const std::vector<Case> cases = {
      {"main;alloc", "expected \"STACK VALUE\""},
      {"main;alloc abc", "found \"abc\" after the last space; expected a number"},
      {"main;f(int, char)", "found \"char)\" after the last space; expected a number"},
      {"   42", "expected a stack of ';'-separated frames before it"},
      {"main;;alloc 3", "frame 2 of \"main;;alloc\" is empty"},
      {";alloc 3", "frame 1 of \";alloc\" is empty"},
      {"main;alloc; 3", "frame 3 of \"main;alloc;\" is empty"},
      {"main inf", "found \"inf\""},
      {"main nan", "found \"nan\""},
      {"main 0x10", "found \"0x10\""},
      {"main 1e", "found \"1e\""},
      {"main 1e999", "out of range"},
      {"main --3", "found \"--3\""},
  };
  for (const Case& c : cases) {
    // Two good lines and a blank one first: the error must name line 4.
    const std::string text = "main;a 1\n\nmain;b 2\n" + std::string(c.line) + "\nmain;c 3\n";
    auto parsed = parse_folded(text, "stacks.folded");
    ASSERT_FALSE(parsed) << c.line;
    EXPECT_EQ(parsed.error().code, ErrorCode::parse_error) << c.line;
    EXPECT_EQ(parsed.error().where, "stacks.folded:4") << c.line;
    EXPECT_NE(parsed.error().what.find(c.what), std::string::npos) << c.line << ": " << parsed.error().what;
    EXPECT_FALSE(parsed.error().fix.empty());
  }
}

TEST(ParseFolded, ReadsBackWhatRenderFoldedWrites) {
  ProfileDiff diff;
  StackDelta grew;
  grew.frames = {"leak(int)", "handle(Request const&)", "main"};  // innermost first
  grew.delta.live_bytes = 2240;
  StackDelta shrank;
  shrank.frames = {"cache::evict()", "main"};
  shrank.delta.live_bytes = -448;
  StackDelta other_metric_only;
  other_metric_only.frames = {"only_accum()", "main"};
  other_metric_only.delta.accum_bytes = 64;
  diff.entries = {grew, shrank, other_metric_only};

  auto parsed = parse_folded(render_folded(diff, ProfileMetric::live_bytes), "diff.folded");
  ASSERT_TRUE(parsed) << parsed.error().message();
  const std::vector<FoldedStack> expected = {stack({"main", "handle(Request const&)", "leak(int)"}, 2240),
                                             stack({"main", "cache::evict()"}, -448)};
  EXPECT_EQ(*parsed, expected);
  EXPECT_EQ(folded_stacks(diff, ProfileMetric::live_bytes), expected);
  EXPECT_EQ(flame_unit(ProfileMetric::live_bytes), "bytes");
  EXPECT_EQ(flame_unit(ProfileMetric::accum_objects), "objects");

  NormalizedProfile profile;
  NormalizedStack s;
  s.frames = {"leaf()", "main"};
  s.scaled.live_objects = 2.5;  // sampled estimates stay fractional
  profile.stacks = {s};
  EXPECT_EQ(folded_stacks(profile, ProfileMetric::live_objects),
            std::vector<FoldedStack>{stack({"main", "leaf()"}, 2.5)});
  EXPECT_TRUE(folded_stacks(profile, ProfileMetric::live_bytes).empty());
}

TEST(Folded, WriteRoundsSanitizesAndParsesBack) {
  const std::vector<FoldedStack> stacks = {stack({"main", "f(a;b)"}, 100.4), stack({"main", "two\nlines"}, -2.5),
                                           stack({"main", "gone"}, 0.4)};
  const std::string text = write_folded(stacks);
  EXPECT_EQ(text, "main;f(a:b) 100\nmain;two lines -3\n");  // half away from zero; a 0 line is left out
  auto parsed = parse_folded(text, "written.folded");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(*parsed, (std::vector<FoldedStack>{stack({"main", "f(a:b)"}, 100), stack({"main", "two lines"}, -3)}));
  EXPECT_EQ(write_folded({}), "");
}

// Found by tests/fuzz/folded_fuzz.cpp: a leaf that ends in a line break (or
// is one) was written as blanks that merge into the separator before the
// value, so the line parsed to another stack, or did not parse at all.
TEST(Folded, WriteKeepsEveryLineParseableWhateverTheFramesEndIn) {
  const std::vector<FoldedStack> stacks = {stack({"main", "setup\r\r"}, 1), stack({"main", "\r\n"}, 2),
                                           stack({"", "leaf \t"}, 3), stack({"mid\n", "x"}, 4)};
  const std::string text = write_folded(stacks);
  EXPECT_EQ(text, "main;setup 1\nmain;? 2\n?;leaf 3\nmid ;x 4\n");
  auto parsed = parse_folded(text, "written.folded");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->size(), stacks.size());
  EXPECT_EQ(write_folded(*parsed), text);
}

// --- render_flamegraph_svg ----------------------------------------------------

TEST(FlamegraphSvg, IsValidSvgWithATooltipPerFrame) {
  FlamegraphOptions options;
  options.title = "live bytes";
  options.subtitle = "run 42";
  const std::string text = render_flamegraph_svg({stack({"main", "a", "x"}, 100), stack({"main", "b"}, 300)}, options);
  EXPECT_EQ(text.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<svg ", 0), 0u);
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(parse_svg(text, svg));
  // all, main, a, x, b: each with "name (value unit, pct%)".
  ASSERT_EQ(svg.frames.size(), 5u);
  EXPECT_EQ(svg.frames[0].tip, "all (400 bytes, 100.00%)");
  EXPECT_EQ(svg.frames[1].tip, "main (400 bytes, 100.00%)");
  EXPECT_EQ(svg.frames[2].tip, "a (100 bytes, 25.00%)");
  EXPECT_EQ(svg.frames[3].tip, "x (100 bytes, 25.00%)");
  EXPECT_EQ(svg.frames[4].tip, "b (300 bytes, 75.00%)");
  EXPECT_NE(svg.text.find("live bytes\n"), std::string::npos);
  EXPECT_NE(svg.text.find("run 42\n"), std::string::npos);
  // The root spans the drawing width; callees sit above their callers.
  const Frame* all = find_frame(svg, "all");
  const Frame* main = find_frame(svg, "main");
  const Frame* x = find_frame(svg, "x");
  ASSERT_TRUE(all && main && x);
  EXPECT_NEAR(all->width, 1200 - 20, 0.01);
  EXPECT_LT(main->y, all->y);
  EXPECT_LT(x->y, main->y);
  // Readable without the script: labels are already there.
  EXPECT_EQ(main->label, "main");
  pugi::xml_node script = svg.doc.child("svg").child("script");
  ASSERT_TRUE(script);
  EXPECT_NE(std::string(script.text().get()).find("function zoom"), std::string::npos);

  options.interactive = false;
  options.xml_declaration = false;
  const std::string plain = render_flamegraph_svg({stack({"main"}, 1)}, options);
  EXPECT_EQ(plain.rfind("<svg ", 0), 0u);
  EXPECT_EQ(plain.find("<script"), std::string::npos);
}

TEST(FlamegraphSvg, WidthsAreProportionalToValues) {
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(parse_svg(
      render_flamegraph_svg({stack({"main", "small"}, 100), stack({"main", "large"}, 300), stack({"main"}, 200)}, {}),
      svg));
  const Frame* small = find_frame(svg, "small");
  const Frame* large = find_frame(svg, "large");
  const Frame* main = find_frame(svg, "main");
  ASSERT_TRUE(small && large && main);
  EXPECT_NEAR(large->width, 3 * small->width, 0.02);
  EXPECT_NEAR(main->width, 6 * small->width, 0.02);
  // Siblings in name order, side by side from the parent's left edge; the
  // parent's own 200 leave room on the right.
  EXPECT_NEAR(large->x, main->x, 0.01);
  EXPECT_NEAR(small->x, large->x + large->width, 0.02);
  EXPECT_LT(small->x + small->width, main->x + main->width - 100);
  // Repeated stacks add up.
  Svg twice;
  ASSERT_NO_FATAL_FAILURE(parse_svg(
      render_flamegraph_svg({stack({"main", "a"}, 50), stack({"main", "b"}, 100), stack({"main", "a"}, 50)}, {}),
      twice));
  ASSERT_TRUE(find_frame(twice, "a") && find_frame(twice, "b"));
  EXPECT_NEAR(find_frame(twice, "a")->width, find_frame(twice, "b")->width, 0.02);
  EXPECT_EQ(find_frame(twice, "a")->tip, "a (100 bytes, 50.00%)");
}

TEST(FlamegraphSvg, EscapesNamesForXml) {
  const std::string nasty = "std::vector<int>::push_back(int const&) \"quoted\" 'single' </svg>";
  FlamegraphOptions options;
  options.title = "<title> & \"more\"";
  const std::string text = render_flamegraph_svg({stack({"main", nasty}, 10), stack({"main",
                                                                                     "bad\xff"
                                                                                     "byte\x01"},
                                                                                    10)},
                                                 options);
  EXPECT_NE(
      text.find("std::vector&lt;int&gt;::push_back(int const&amp;) &quot;quoted&quot; &#39;single&#39; &lt;/svg&gt;"),
      std::string::npos);
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(parse_svg(text, svg));
  const Frame* f = find_frame(svg, nasty);
  ASSERT_TRUE(f) << text;
  EXPECT_EQ(f->tip, nasty + " (10 bytes, 50.00%)");
  // Invalid UTF-8 and control characters become U+FFFD, so the file still parses.
  EXPECT_TRUE(find_frame(svg,
                         "bad\xEF\xBF\xBD"
                         "byte\xEF\xBF\xBD"))
      << text;
  EXPECT_NE(svg.text.find("<title> & \"more\""), std::string::npos);
}

TEST(FlamegraphSvg, SameInputGivesTheSameBytes) {
  std::vector<FoldedStack> stacks;
  for (int i = 0; i < 50; ++i) {
    stacks.push_back(stack({"main", "worker" + std::to_string(i % 7), "alloc" + std::to_string(i)}, 10 + i));
  }
  FlamegraphOptions options;
  options.title = "determinism";
  const std::string first = render_flamegraph_svg(stacks, options);
  EXPECT_EQ(render_flamegraph_svg(stacks, options), first);
  // The layout depends on names, not on input order.
  std::reverse(stacks.begin(), stacks.end());
  EXPECT_EQ(render_flamegraph_svg(stacks, options), first);
  // Colours derive from names: one name, one colour, wherever it is.
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(
      parse_svg(render_flamegraph_svg({stack({"main", "shared"}, 1), stack({"other", "shared"}, 1)}, options), svg));
  std::vector<std::string> fills;
  for (const Frame& f : svg.frames) {
    if (f.tip.rfind("shared (", 0) == 0) fills.push_back(f.fill);
  }
  ASSERT_EQ(fills.size(), 2u);
  EXPECT_EQ(fills[0], fills[1]);
}

TEST(FlamegraphSvg, DifferentialIsRedForGrowthAndBlueForShrinkage) {
  FlamegraphOptions options;
  options.differential = true;
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(parse_svg(
      render_flamegraph_svg({stack({"main", "grow"}, 100), stack({"main", "shrink"}, -50), stack({"main", "tiny"}, 5)},
                            options),
      svg));
  const Frame* grow = find_frame(svg, "grow");
  const Frame* shrink = find_frame(svg, "shrink");
  const Frame* tiny = find_frame(svg, "tiny");
  const Frame* all = find_frame(svg, "all");
  ASSERT_TRUE(grow && shrink && tiny && all);
  // Width is |change|.
  EXPECT_NEAR(grow->width, 2 * shrink->width, 0.02);
  EXPECT_EQ(grow->tip, "grow (+100 bytes, 64.52%)");
  EXPECT_EQ(shrink->tip, "shrink (-50 bytes, 32.26%)");
  EXPECT_EQ(all->tip, "all (+55 bytes, 100.00%)");
  std::vector<int> red = rgb_of(grow->fill), blue = rgb_of(shrink->fill), pale = rgb_of(tiny->fill);
  ASSERT_EQ(red.size(), 3u);
  ASSERT_EQ(blue.size(), 3u);
  ASSERT_EQ(pale.size(), 3u);
  EXPECT_EQ(red[0], 255);
  EXPECT_LT(red[1], 255);
  EXPECT_EQ(red[1], red[2]);
  EXPECT_EQ(blue[2], 255);
  EXPECT_LT(blue[0], 255);
  EXPECT_EQ(blue[0], blue[1]);
  // A smaller growth is paler.
  EXPECT_EQ(pale[0], 255);
  EXPECT_GT(pale[1], red[1]);
  EXPECT_NE(svg.text.find("red grew, blue shrank"), std::string::npos);

  // Without differential, a negative stack is left out, and said so.
  Svg plain;
  ASSERT_NO_FATAL_FAILURE(
      parse_svg(render_flamegraph_svg({stack({"main", "grow"}, 100), stack({"main", "shrink"}, -50)}, {}), plain));
  EXPECT_FALSE(find_frame(plain, "shrink"));
  EXPECT_NE(plain.text.find("1 stack with a negative or non-finite value left out"), std::string::npos) << plain.text;
}

TEST(FlamegraphSvg, EmptyInputSaysNoSamples) {
  for (const std::vector<FoldedStack>& stacks :
       {std::vector<FoldedStack>{}, std::vector<FoldedStack>{stack({"main"}, 0)}}) {
    const std::string text = render_flamegraph_svg(stacks, {});
    Svg svg;
    ASSERT_NO_FATAL_FAILURE(parse_svg(text, svg));
    EXPECT_TRUE(svg.frames.empty());
    EXPECT_NE(svg.text.find("no samples"), std::string::npos) << text;
    EXPECT_EQ(text.find("<script"), std::string::npos);
  }
}

TEST(FlamegraphSvg, DropsFramesNarrowerThanATenthOfAPixelAndCountsThem) {
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(
      parse_svg(render_flamegraph_svg({stack({"main", "big"}, 1e9), stack({"main", "tiny", "deeper"}, 1)}, {}), svg));
  EXPECT_TRUE(find_frame(svg, "big"));
  EXPECT_FALSE(find_frame(svg, "tiny"));
  EXPECT_FALSE(find_frame(svg, "deeper"));
  EXPECT_NE(svg.text.find("2 frames narrower than 0.1 px not drawn"), std::string::npos) << svg.text;
  for (const Frame& f : svg.frames) EXPECT_GE(f.width, 0.1) << f.tip;
}

TEST(FlamegraphSvg, LabelsAreCutToFitTheirFrame) {
  const std::string long_name(200, 'n');
  FlamegraphOptions options;
  options.width = 400;
  Svg svg;
  ASSERT_NO_FATAL_FAILURE(
      parse_svg(render_flamegraph_svg(
                    {stack({"main", long_name}, 50), stack({"main", "narrow"}, 1), stack({"main", "z"}, 49)}, options),
                svg));
  const Frame* big = find_frame(svg, long_name);
  const Frame* narrow = find_frame(svg, "narrow");
  ASSERT_TRUE(big && narrow);
  ASSERT_GT(big->label.size(), 3u);
  EXPECT_EQ(big->label.substr(big->label.size() - 2), "..");
  // Verdana's average glyph is ~0.59 em at 12 px.
  EXPECT_LE(static_cast<double>(big->label.size()) * 12 * 0.59, big->width);
  EXPECT_EQ(narrow->label, "");  // 3.8 px: no room for three characters
}

// The short label (data-n) drawn for a frame named `name`, in a change graph.
std::string short_label(const std::string& name) {
  Svg svg;
  parse_svg(render_change_flamegraph_svg({ChangedStack{{name}, 1, 0}}, short_options()), svg);
  for (pugi::xml_node g : svg.doc.child("svg").children("g")) {
    if (std::string(g.child("title").text().get()).rfind("all\n", 0) == 0) continue;
    return g.attribute("data-n").value();
  }
  return "<none>";
}

TEST(ChangeFlamegraph, ShortLabelsDropTypesParametersAndLongTemplateArguments) {
  // libstdc++'s spelled-out std::string, a return type, parameters, const.
  EXPECT_EQ(short_label("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
                        "Parser::name(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
                        "const&) const at src/parser.cpp:12"),
            "Parser::name");
  // Short, flat template arguments stay; defaults go; long or nested ones become <…>.
  EXPECT_EQ(short_label("std::vector<char, std::allocator<char> >::reserve(unsigned long)"),
            "std::vector<char>::reserve");
  EXPECT_EQ(
      short_label("std::map<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, "
                  "int, std::less<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
                  ">, std::allocator<std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, "
                  "std::allocator<char> > const, int> > >::operator[](std::__cxx11::basic_string<char, "
                  "std::char_traits<char>, std::allocator<char> > const&)"),
      "std::map<std::string, int>::operator[]");
  EXPECT_EQ(short_label("void std::_Hashtable<int, std::pair<int const, Widget>, std::allocator<std::pair<int const, "
                        "Widget> > >::_M_rehash(unsigned long)"),
            "std::_Hashtable<\xE2\x80\xA6>::_M_rehash");
  // Operators, anonymous namespaces and lambdas keep their names.
  EXPECT_EQ(short_label("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(short_label("operator delete[](void*)"), "operator delete[]");
  EXPECT_EQ(short_label("bool operator<<Key>(Key const&, Key const&)"), "operator<<Key>");
  EXPECT_EQ(short_label("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
                        "std::operator+<char, std::char_traits<char>, std::allocator<char> >(char const*, "
                        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&)"),
            "std::operator+<char>");
  EXPECT_EQ(short_label("(anonymous namespace)::load(int)"), "(anonymous namespace)::load");
  EXPECT_EQ(short_label("Cache::fill()::{lambda(int)#1}::operator()(int) const"),
            "Cache::fill()::{lambda(int)#1}::operator()");
  // Not C++, or broken: as it is.
  EXPECT_EQ(short_label("malloc"), "malloc");
  EXPECT_EQ(short_label("[framework]"), "[framework]");
  EXPECT_EQ(short_label("broken<(name"), "broken<(name");
}

TEST(ChangeFlamegraph, NarrowLabelsKeepTheirDistinguishingEnd) {
  // Two siblings whose names differ only at the end, in frames too narrow
  // for the whole name: the labels differ.
  const std::string a = "heapgate::detail::SomeLongNamespace::Parser::grow() at src/parser.cpp:88";
  const std::string b = "heapgate::detail::SomeLongNamespace::Parser::token() at src/parser.cpp:120";
  FlamegraphOptions options = short_options();
  options.width = 400;
  Svg svg;
  parse_svg(render_change_flamegraph_svg({ChangedStack{{a}, 100, 0}, ChangedStack{{b}, 100, 0}}, options), svg);
  std::vector<std::string> labels;
  for (const Frame& f : svg.frames) {
    if (f.tip.rfind("all\n", 0) != 0) labels.push_back(f.label);
  }
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0].rfind("\xE2\x80\xA6", 0), 0u) << labels[0];
  EXPECT_EQ(labels[0].substr(labels[0].size() - 12), "Parser::grow") << labels[0];
  EXPECT_EQ(labels[1].substr(labels[1].size() - 13), "Parser::token") << labels[1];
  EXPECT_NE(labels[0], labels[1]);
  // The full name and location stay in the tooltip.
  EXPECT_EQ(svg.frames[1].tip.rfind("heapgate::detail::SomeLongNamespace::Parser::grow()\nat src/parser.cpp:88\n", 0),
            0u)
      << svg.frames[1].tip;
}

TEST(ChangeFlamegraph, GrowthIsRedShrinkageBlueUnchangedGreyAndGoneStacksKeepTheirWidth) {
  const std::vector<ChangedStack> stacks = {
      {{"main", "grew()"}, 300, 200},  // 100 before
      {{"main", "same()"}, 100, 0},    // unchanged
      {{"main", "gone()"}, 0, -200},   // 200 before, nothing now
      {{"main", "new()"}, 100, 100},   // nothing before
  };
  Svg svg;
  parse_svg(render_change_flamegraph_svg(stacks, short_options()), svg);
  auto frame = [&](const std::string& name) -> const Frame* {
    for (const Frame& f : svg.frames) {
      if (f.tip.rfind(name + "\n", 0) == 0) return &f;
    }
    return nullptr;
  };
  const Frame* grew = frame("grew()");
  const Frame* same = frame("same()");
  const Frame* gone = frame("gone()");
  const Frame* fresh = frame("new()");
  const Frame* root = frame("all");
  ASSERT_TRUE(grew && same && gone && fresh && root);
  // Width: the larger of before and now (300, 100, 200, 100 of 700).
  EXPECT_NEAR(grew->width / root->width, 300.0 / 700, 1e-3);
  EXPECT_NEAR(gone->width / root->width, 200.0 / 700, 1e-3);
  EXPECT_EQ(grew->fill.rfind("rgb(255,", 0), 0u) << grew->fill;
  EXPECT_EQ(fresh->fill, "rgb(255,70,70)");  // wholly new: the deepest red
  EXPECT_EQ(same->fill, "rgb(205,205,205)");
  EXPECT_EQ(gone->fill, "rgb(70,110,255)");  // wholly gone: the deepest blue
  // A larger share of change is a deeper colour.
  EXPECT_GT(std::stoi(grew->fill.substr(8)), 70);
  EXPECT_EQ(grew->tip, "grew()\n300 bytes now, +200 bytes (+200%) against the baseline");
  EXPECT_EQ(same->tip, "same()\n100 bytes now, unchanged against the baseline");
  EXPECT_EQ(gone->tip, "gone()\n0 bytes now, -200 bytes (-100%) against the baseline");
  EXPECT_EQ(fresh->tip, "new()\n100 bytes now, +100 bytes against the baseline");
  EXPECT_EQ(root->tip, "all\n500 bytes now, +100 bytes (+25%) against the baseline");
  EXPECT_NE(svg.text.find("red grew, blue shrank, grey unchanged"), std::string::npos) << svg.text;

  // Nothing known about before: grey, and the tooltip says only what is now.
  FlamegraphOptions unknown = short_options();
  unknown.changes_known = false;
  Svg plain;
  parse_svg(render_change_flamegraph_svg(stacks, unknown), plain);
  for (const Frame& f : plain.frames) {
    EXPECT_EQ(f.fill, "rgb(205,205,205)") << f.tip;
    EXPECT_EQ(f.tip.find("baseline"), std::string::npos) << f.tip;
  }
}

TEST(ChangeFlamegraph, DrawsTheLargestChangesUpToTheCapAndCountsTheRest) {
  std::vector<ChangedStack> stacks;
  for (int i = 0; i < 10; ++i) stacks.push_back(ChangedStack{{"f" + std::to_string(i) + "()"}, 100, i * 10.0});
  stacks.push_back(ChangedStack{{"bad()"}, -5, 0});
  FlamegraphOptions options = short_options();
  options.max_stacks = 4;
  Svg svg;
  parse_svg(render_change_flamegraph_svg(stacks, options), svg);
  std::vector<std::string> drawn;
  for (const Frame& f : svg.frames) drawn.push_back(f.tip.substr(0, f.tip.find('\n')));
  EXPECT_EQ(drawn, (std::vector<std::string>{"all", "f6()", "f7()", "f8()", "f9()"}));
  EXPECT_NE(svg.text.find("6 more stacks not drawn (the 4 largest are)"), std::string::npos) << svg.text;
  EXPECT_NE(svg.text.find("1 stack with a negative or non-finite value left out"), std::string::npos) << svg.text;
}

}  // namespace
}  // namespace heapgate
