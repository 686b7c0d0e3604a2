-- tests/data/db-v2-99f4266.sql: a database written by nas at commit 99f4266 (schema
-- version 2, experiments identified by their canonical config), from
-- table.conf with search.trials = 6 and then 8: two experiments of one name,
-- the second re-ran all 8 trials. @TABLE@ stands for the table's path
-- (tests/e2e/test_old_database.sh substitutes it). Made with sqlite3 .dump.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE experiment(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  conf_canonical TEXT NOT NULL UNIQUE,
  conf_text TEXT NOT NULL,
  conf_path TEXT NOT NULL,
  seed INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  trials_budget INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('running','done','interrupted','failed','exhausted'))
);
INSERT INTO experiment VALUES(1,'old-table',replace('experiment = "old-table";\nseed = 3;\ndata.dataset = "fashion-mnist";\ndata.dir = "/usr/share/datasets/fashion-mnist";\ndata.train_subset = 0;\ndata.valid = 5000;\nspace.type = "cell";\nspace.nodes = 4;\nspace.ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"];\nspace.channels = 16;\nspace.stages = 3;\nspace.cells_per_stage = 1;\nproxy.epochs = 1;\nproxy.batch_size = 128;\nproxy.lr = 0.05;\nproxy.momentum = 0.9;\nproxy.nesterov = true;\nproxy.weight_decay = 0.0005;\nproxy.schedule = "cosine";\nproxy.threads = 2;\nproxy.backend = "cpu";\nproxy.precision = "fp32";\nproxy.keep_weights = false;\nsearch.strategy = "evolution";\nsearch.trials = 6;\nsearch.population = 4;\nsearch.sample_size = 2;\nsearch.nao.seed_archs = 20;\nsearch.nao.top_k = 5;\nsearch.nao.embed_size = 16;\nsearch.nao.hidden_size = 32;\nsearch.nao.epochs = 30;\nsearch.nao.lr = 0.005;\nsearch.nao.tradeoff = 0.8;\nsearch.nao.step = 0.1;\nsearch.nao.step_growth = 1.5;\nsearch.nao.max_steps = 8;\nsearch.nao.batch_per_round = 2;\nsearch.nao.beam_width = 16;\nsearch.nao.max_edit = 1;\nsearch.nao.rank_weight = 0.0;\nsearch.nao.fill_neighbours = true;\nevaluator.kind = "table";\nevaluator.table = "@TABLE@";\nevaluator.column = "acc";\nevaluator.test_column = "";\nevaluator.table_scale = 1.0;\nevaluator.latency_runs = 20;\nevaluator.latency_warmup = 3;\nobjectives = ( { metric = "val_accuracy"; goal = "max"; } );\nconstraints.latency_ms = 0.0;\nconstraints.mmacs = 0.0;\nconstraints.params = 0.0;\nworkers.count = 0;\nworkers.device = "cpu";\nworkers.trial_timeout_s = 0;\nworkers.heartbeat_s = 5;\nworkers.max_retries = 1;\nworkers.gpus = "all";\nworkers.trials_per_gpu = 1;\nworkers.ordered = true;\n','\n',char(10)),replace('experiment = "old-table";\nseed = 3;\nsearch: { strategy = "evolution"; trials = 6; population = 4; sample_size = 2; };\nevaluator: { kind = "table"; table = "@TABLE@"; column = "acc"; table_scale = 1.0; };\nworkers: { count = 0; };\n','\n',char(10)),'old.conf',3,'evolution',6,'2026-11-23T20:23:36.998Z','2026-11-23T20:23:37.042Z','done');
INSERT INTO experiment VALUES(2,'old-table',replace('experiment = "old-table";\nseed = 3;\ndata.dataset = "fashion-mnist";\ndata.dir = "/usr/share/datasets/fashion-mnist";\ndata.train_subset = 0;\ndata.valid = 5000;\nspace.type = "cell";\nspace.nodes = 4;\nspace.ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"];\nspace.channels = 16;\nspace.stages = 3;\nspace.cells_per_stage = 1;\nproxy.epochs = 1;\nproxy.batch_size = 128;\nproxy.lr = 0.05;\nproxy.momentum = 0.9;\nproxy.nesterov = true;\nproxy.weight_decay = 0.0005;\nproxy.schedule = "cosine";\nproxy.threads = 2;\nproxy.backend = "cpu";\nproxy.precision = "fp32";\nproxy.keep_weights = false;\nsearch.strategy = "evolution";\nsearch.trials = 8;\nsearch.population = 4;\nsearch.sample_size = 2;\nsearch.nao.seed_archs = 20;\nsearch.nao.top_k = 5;\nsearch.nao.embed_size = 16;\nsearch.nao.hidden_size = 32;\nsearch.nao.epochs = 30;\nsearch.nao.lr = 0.005;\nsearch.nao.tradeoff = 0.8;\nsearch.nao.step = 0.1;\nsearch.nao.step_growth = 1.5;\nsearch.nao.max_steps = 8;\nsearch.nao.batch_per_round = 2;\nsearch.nao.beam_width = 16;\nsearch.nao.max_edit = 1;\nsearch.nao.rank_weight = 0.0;\nsearch.nao.fill_neighbours = true;\nevaluator.kind = "table";\nevaluator.table = "@TABLE@";\nevaluator.column = "acc";\nevaluator.test_column = "";\nevaluator.table_scale = 1.0;\nevaluator.latency_runs = 20;\nevaluator.latency_warmup = 3;\nobjectives = ( { metric = "val_accuracy"; goal = "max"; } );\nconstraints.latency_ms = 0.0;\nconstraints.mmacs = 0.0;\nconstraints.params = 0.0;\nworkers.count = 0;\nworkers.device = "cpu";\nworkers.trial_timeout_s = 0;\nworkers.heartbeat_s = 5;\nworkers.max_retries = 1;\nworkers.gpus = "all";\nworkers.trials_per_gpu = 1;\nworkers.ordered = true;\n','\n',char(10)),replace('experiment = "old-table";\nseed = 3;\nsearch: { strategy = "evolution"; trials = 8; population = 4; sample_size = 2; };\nevaluator: { kind = "table"; table = "@TABLE@"; column = "acc"; table_scale = 1.0; };\nworkers: { count = 0; };\n','\n',char(10)),'old.conf',3,'evolution',8,'2026-11-23T20:23:37.120Z','2026-11-23T20:23:37.183Z','done');
CREATE TABLE trial(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiment(id),
  genotype TEXT NOT NULL,
  arch_key TEXT NOT NULL,
  proposed_by TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('pending','running','done','failed','interrupted')),
  worker INTEGER,
  device TEXT,
  attempt INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  error TEXT, device_name TEXT, device_cc TEXT,
  UNIQUE(experiment_id, arch_key)
);
INSERT INTO trial VALUES(1,1,'|nor_conv_1x1~0|+|avg_pool_3x3~0|skip_connect~1|+|none~0|nor_conv_1x1~1|avg_pool_3x3~2|','#+((0)@avg_pool_3x3+(0)@nor_conv_1x1)@avg_pool_3x3+((0)@nor_conv_1x1)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:23:37.041Z','2026-11-23T20:23:37.041Z','2026-11-23T20:23:37.042Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(2,1,'|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|nor_conv_1x1~0|none~1|none~2|','#+#+(0)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(3,1,'|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+((0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(4,1,'|avg_pool_3x3~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(((0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(5,1,'|avg_pool_3x3~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(#+((0)@avg_pool_3x3)@nor_conv_1x1)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(6,1,'|avg_pool_3x3~0|+|avg_pool_3x3~0|none~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(#+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z','2026-11-23T20:23:37.042Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(7,2,'|nor_conv_1x1~0|+|avg_pool_3x3~0|skip_connect~1|+|none~0|nor_conv_1x1~1|avg_pool_3x3~2|','#+((0)@avg_pool_3x3+(0)@nor_conv_1x1)@avg_pool_3x3+((0)@nor_conv_1x1)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:23:37.181Z','2026-11-23T20:23:37.181Z','2026-11-23T20:23:37.181Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(8,2,'|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|nor_conv_1x1~0|none~1|none~2|','#+#+(0)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(9,2,'|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|skip_connect~2|','#+((0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_1x1+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(10,2,'|avg_pool_3x3~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(((0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(11,2,'|avg_pool_3x3~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(#+((0)@avg_pool_3x3)@nor_conv_1x1)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(12,2,'|avg_pool_3x3~0|+|avg_pool_3x3~0|none~1|+|nor_conv_3x3~0|skip_connect~1|nor_conv_1x1~2|','(#+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_3x3','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(13,2,'|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|skip_connect~0|skip_connect~1|skip_connect~2|','#+((0)@nor_conv_1x1)@nor_conv_1x1+(0)@nor_conv_1x1+0','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.182Z',NULL,NULL,NULL);
INSERT INTO trial VALUES(14,2,'|avg_pool_3x3~0|+|avg_pool_3x3~0|none~1|+|nor_conv_1x1~0|skip_connect~1|nor_conv_1x1~2|','(#+(0)@avg_pool_3x3)@nor_conv_1x1+(0)@avg_pool_3x3+(0)@nor_conv_1x1','evolution','done',0,'table',1,'2026-11-23T20:23:37.182Z','2026-11-23T20:23:37.183Z','2026-11-23T20:23:37.183Z',NULL,NULL,NULL);
CREATE TABLE result(
  trial_id INTEGER PRIMARY KEY REFERENCES trial(id),
  val_accuracy REAL,
  test_accuracy REAL,
  train_loss REAL,
  macs INTEGER,
  params INTEGER,
  latency_ms REAL,
  train_seconds REAL,
  epochs INTEGER,
  score REAL
);
INSERT INTO result VALUES(1,0.32269999999999998685,NULL,0.0,6937472,84218,0.0,0.0,NULL,0.32269999999999998685);
INSERT INTO result VALUES(2,0.59479999999999999538,NULL,0.0,17173376,175834,0.0,0.0,NULL,0.59479999999999999538);
INSERT INTO result VALUES(3,0.56189999999999995505,NULL,0.0,12356480,132826,0.0,0.0,NULL,0.56189999999999995505);
INSERT INTO result VALUES(4,0.71860000000000001652,NULL,0.0,12356480,132826,0.0,0.0,NULL,0.71860000000000001652);
INSERT INTO result VALUES(5,0.47110000000000001874,NULL,0.0,12356480,132826,0.0,0.0,NULL,0.47110000000000001874);
INSERT INTO result VALUES(6,0.77629999999999999005,NULL,0.0,11754368,127226,0.0,0.0,NULL,0.77629999999999999005);
INSERT INTO result VALUES(7,0.32269999999999998685,NULL,0.0,6937472,84218,0.0,0.0,NULL,0.32269999999999998685);
INSERT INTO result VALUES(8,0.59479999999999999538,NULL,0.0,17173376,175834,0.0,0.0,NULL,0.59479999999999999538);
INSERT INTO result VALUES(9,0.56189999999999995505,NULL,0.0,12356480,132826,0.0,0.0,NULL,0.56189999999999995505);
INSERT INTO result VALUES(10,0.71860000000000001652,NULL,0.0,12356480,132826,0.0,0.0,NULL,0.71860000000000001652);
INSERT INTO result VALUES(11,0.47110000000000001874,NULL,0.0,12356480,132826,0.0,0.0,NULL,0.47110000000000001874);
INSERT INTO result VALUES(12,0.77629999999999999005,NULL,0.0,11754368,127226,0.0,0.0,NULL,0.77629999999999999005);
INSERT INTO result VALUES(13,0.63609999999999999875,NULL,0.0,6937472,84218,0.0,0.0,NULL,0.63609999999999999875);
INSERT INTO result VALUES(14,0.41339999999999998969,NULL,0.0,6937472,84218,0.0,0.0,NULL,0.41339999999999998969);
CREATE TABLE strategy_state(
  experiment_id INTEGER NOT NULL REFERENCES experiment(id),
  name TEXT NOT NULL,
  blob BLOB,
  updated_at TEXT NOT NULL,
  PRIMARY KEY(experiment_id, name)
);
INSERT INTO strategy_state VALUES(1,'controller.workers',X'31','2026-11-23T20:23:37.005Z');
INSERT INTO strategy_state VALUES(2,'controller.workers',X'31','2026-11-23T20:23:37.123Z');
CREATE INDEX trial_by_status ON trial(experiment_id, status);
COMMIT;
PRAGMA application_id = 1851880241;
PRAGMA user_version = 2;
