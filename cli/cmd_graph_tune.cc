// `tensortune graph-tune`: its options and help; the job itself is workflow::graph_tune.
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "workflow/graph_tune.h"

namespace tensortune::cli {

void add_graph_tune_command(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<workflow::GraphTuneOptions>();
  CLI::App* c = app.add_subcommand(
      "graph-tune",
      "Choose every conv node's record for the whole network (kernel times + measured layout "
      "transforms) and store them as graph-best records");
  add_model_flags(c, f->model, false);
  c->add_option("--db", f->db, "the record DB of a tuning run of this model")->required();
  c->add_flag("--no-int8", f->model.no_int8,
              "a quantized (QDQ) model's convolutions as float32 ones, for `compile --no-int8` "
              "(by default they are the int8 workloads compile runs)");
  c->add_option("--device-key", f->device_key,
                "records of this device key (default: this machine's; another key's transforms "
                "are estimated, not measured)");
  c->add_option("--tracker", f->tracker,
                "HOST:PORT of a tracker: time the layout transforms on its devices of --key")
      ->group("Farm");
  c->add_option("--key", f->device_key,
                "the device key (with --tracker: whose devices time the transforms); the same "
                "as --device-key")
      ->group("Farm");
  c->add_option("--token-file", f->token_file, "with --tracker: file holding the tracker's token")
      ->group("Farm");
  c->add_option("--tls-ca", f->tls_ca, "with --tracker: CA certificate (PEM) of the tracker")
      ->group("Farm");
  add_client_certificate_options(*c, f->tls_cert, f->tls_key, "Farm");
  c->add_option("--top-k", f->top_k,
                "candidates per conv node: the fastest record of each block pair, this many")
      ->check(at_least(1))
      ->capture_default_str();
  c->add_option("--threads", f->threads, "threads the layout transforms are timed on")
      ->check(at_least(1))
      ->capture_default_str();
  c->add_option("--solver", f->solver,
                "auto (DP while its state fits, else PBQP), dp (exact) or pbqp (exact on "
                "series-parallel graphs, else a heuristic it reports)")
      ->check(CLI::IsMember({"auto", "dp", "pbqp"}))
      ->capture_default_str();
  c->add_flag("--retime-transforms", f->retime_transforms,
              "delete the DB's layout-transform times (every device key) and time the needed ones "
              "again (after a tensortune upgrade that changed how they are timed)");
  c->add_option("--export-log", f->export_log,
                "also write AutoTVM's graph opt log (resnet-18_graph_opt.log: one record per conv "
                "node in node order, what apply_graph_best reads)");
  c->add_option("--from-log", f->from_log,
                "take the choice from an AutoTVM graph opt log instead of solving (its records "
                "must match the model's conv nodes in order)");
  c->footer(
      "\nThe flow: tune the model's tasks, graph-tune, compile.\n"
      "  tensortune tune --model resnet-18 --db r18.db\n"
      "  tensortune graph-tune --model resnet-18 --db r18.db\n"
      "  tensortune compile --model resnet-18 --records r18.db -o r18.tt\n"
      "On a farm, the transforms are timed on devices of the key the model was tuned on:\n"
      "  tensortune tune --model resnet-18 --db r18.db --tracker farm:9190 --key x86-avx512\n"
      "  tensortune graph-tune --model resnet-18 --db r18.db --tracker farm:9190 --key x86-avx512\n"
      "Layout-transform times are kept in the DB (table layout_transforms): a second run measures "
      "only new ones. Graph-best records are keyed by the model's fingerprint (its structure and "
      "shapes) and the device key.");
  c->callback([&exit_code, f] {
    if (Status s = workflow::graph_tune(*f); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
