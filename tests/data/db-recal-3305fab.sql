-- tests/data/db-recal-3305fab.sql: a database written by nas at commit 3305fab
-- (schema version 8), when proxy.bn_recalibrate defaulted to 0: experiment
-- "recal" (2 random trials of the cell space, Fashion-MNIST, 256 training and
-- 300 validation images), made from the config tests/e2e/test_stored_recal.sh
-- writes as set.conf, with `nas run set.conf --db r.db`. Its canonical text
-- has "proxy.bn_recalibrate = 0;". The kept weights' rows (table
-- trial_weights) were deleted: their files are not here. Made with sqlite3
-- .dump, then PRAGMA application_id and user_version appended.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
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
  error TEXT, device_name TEXT, device_cc TEXT, flag TEXT,
  UNIQUE(experiment_id, arch_key)
);
INSERT INTO trial VALUES(1,1,'|none~0|+|skip_connect~0|nor_conv_1x1~1|+|skip_connect~0|nor_conv_1x1~1|skip_connect~2|','b#1+b#2+x+x','random','done',0,'cpu',1,'2026-11-25T02:23:11.731Z','2026-11-25T02:23:11.731Z','2026-11-25T02:23:11.913Z','diverged: val_accuracy 0.1367 is chance level (<= 0.1520: 1/10 + 3 standard errors over 300 validation images); without BN recalibration: proxy.bn_recalibrate = N tells stale BN statistics after a short proxy from divergence','AMD EPYC',NULL,'diverged');
INSERT INTO trial VALUES(2,1,'|nor_conv_1x1~0|+|avg_pool_3x3~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|','c1(x)+c1(x)+p(x)+x','random','done',0,'cpu',1,'2026-11-25T02:23:11.913Z','2026-11-25T02:23:11.914Z','2026-11-25T02:23:12.064Z','diverged: val_accuracy 0.0967 is chance level (<= 0.1520: 1/10 + 3 standard errors over 300 validation images); without BN recalibration: proxy.bn_recalibrate = N tells stale BN statistics after a short proxy from divergence','AMD EPYC',NULL,'diverged');
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
INSERT INTO result VALUES(1,0.13666666666666665852,NULL,2.277838289737701416,1762752,21506,1.3285140004009008407,0.1319570059986290289,1,0.13666666666666665852);
INSERT INTO result VALUES(2,0.096666666666666664631,NULL,2.250152587890625,1612224,20050,0.20680699869990348815,0.11920710900085396133,1,0.096666666666666664631);
CREATE TABLE strategy_state(
  experiment_id INTEGER NOT NULL REFERENCES experiment(id),
  name TEXT NOT NULL,
  blob BLOB,
  updated_at TEXT NOT NULL,
  PRIMARY KEY(experiment_id, name)
);
INSERT INTO strategy_state VALUES(1,'controller.workers',X'313a31','2026-11-25T02:23:11.718Z');
CREATE TABLE IF NOT EXISTS "experiment"(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  conf_canonical TEXT NOT NULL,
  conf_text TEXT NOT NULL,
  conf_path TEXT NOT NULL,
  seed INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  trials_budget INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('running','done','interrupted','failed','exhausted'))
);
INSERT INTO experiment VALUES(1,'recal',replace('experiment = "recal";\nseed = 7;\ndata.dataset = "fashion-mnist";\ndata.dir = "/usr/share/datasets/fashion-mnist";\ndata.train_subset = 256;\ndata.valid = 300;\ndata.format = "";\ndata.train_images = "";\ndata.train_labels = "";\ndata.test_images = "";\ndata.test_labels = "";\ndata.layout = "";\ndata.mean = [];\ndata.std = [];\ndata.size = 0;\ndata.augment = "";\ndata.loader_threads = 1;\nspace.type = "cell";\nspace.nodes = 4;\nspace.ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"];\nspace.channels = 8;\nspace.stages = 3;\nspace.cells_per_stage = 1;\nproxy.epochs = 1;\nproxy.batch_size = 64;\nproxy.lr = 0.05;\nproxy.momentum = 0.9;\nproxy.nesterov = true;\nproxy.weight_decay = 0.0005;\nproxy.schedule = "cosine";\nproxy.threads = 1;\nproxy.backend = "cpu";\nproxy.precision = "fp32";\nproxy.keep_weights = false;\nproxy.bn_recalibrate = 0;\nsearch.strategy = "random";\nsearch.trials = 2;\nsearch.population = 10;\nsearch.sample_size = 3;\nsearch.nao.seed_archs = 20;\nsearch.nao.top_k = 5;\nsearch.nao.embed_size = 16;\nsearch.nao.hidden_size = 32;\nsearch.nao.epochs = 30;\nsearch.nao.lr = 0.005;\nsearch.nao.tradeoff = 0.8;\nsearch.nao.step = 0.1;\nsearch.nao.step_growth = 1.5;\nsearch.nao.max_steps = 8;\nsearch.nao.batch_per_round = 2;\nsearch.nao.beam_width = 16;\nsearch.nao.max_edit = 1;\nsearch.nao.rank_weight = 0.0;\nsearch.nao.fill_neighbours = true;\nsearch.fidelity.resource = "epochs";\nsearch.fidelity.min = 1;\nsearch.fidelity.max = 9;\nsearch.fidelity.eta = 3;\nsearch.fidelity.scheduler = "none";\nsearch.time_limit = 0.0;\nsearch.enqueue = [];\nevaluator.kind = "train";\nevaluator.table = "";\nevaluator.column = "cifar10-val";\nevaluator.test_column = "";\nevaluator.table_scale = 0.01;\nevaluator.latency_runs = 1;\nevaluator.latency_warmup = 0;\nobjectives = ( { metric = "val_accuracy"; goal = "max"; } );\nconstraints.latency_ms = 0.0;\nconstraints.mmacs = 0.0;\nconstraints.params = 0.0;\nworkers.count = 1;\nworkers.device = "cpu";\nworkers.trial_timeout_s = 0;\nworkers.heartbeat_s = 5;\nworkers.max_retries = 1;\nworkers.gpus = "all";\nworkers.trials_per_gpu = 1;\nworkers.ordered = true;\n','\n',char(10)),replace('experiment = "recal";\nseed = 7;\ndata: { dir = "/usr/share/datasets/fashion-mnist"; train_subset = 256; valid = 300; };\nspace: { channels = 8; };\nproxy: { batch_size = 64; backend = "cpu"; threads = 1; };\nsearch: { strategy = "random"; trials = 2; };\nevaluator: { latency_runs = 1; latency_warmup = 0; };\nworkers: { count = 1; };\n','\n',char(10)),'recal.conf',7,'random',2,'2026-11-25T02:23:11.599Z','2026-11-25T02:23:12.065Z','done');
CREATE TABLE rung(
  trial_id INTEGER NOT NULL REFERENCES trial(id),
  fidelity INTEGER NOT NULL,
  val_accuracy REAL,
  loss REAL,
  seconds REAL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(trial_id, fidelity)
);
CREATE TABLE proxy_check(
  experiment_id INTEGER NOT NULL REFERENCES experiment(id),
  arch INTEGER NOT NULL,
  genotype TEXT NOT NULL,
  seed_index INTEGER NOT NULL,
  seed INTEGER NOT NULL,
  rung INTEGER NOT NULL,
  budget INTEGER NOT NULL,
  val_accuracy REAL,
  train_loss REAL,
  train_seconds REAL,
  eval_seconds REAL,
  error TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY(experiment_id, arch, seed_index, rung)
);
CREATE TABLE trial_weights(
  trial_id INTEGER PRIMARY KEY REFERENCES trial(id),
  path TEXT NOT NULL,
  bytes INTEGER,
  created_at TEXT NOT NULL
);
CREATE TABLE final_training(
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER REFERENCES experiment(id),
  trial_id INTEGER REFERENCES trial(id),
  genotype TEXT NOT NULL,
  arch_json TEXT,
  epochs INTEGER NOT NULL,
  recipe TEXT NOT NULL,
  augment TEXT NOT NULL,
  backend TEXT NOT NULL,
  train_images INTEGER NOT NULL,
  test_accuracy REAL,
  test_loss REAL,
  train_loss REAL,
  train_accuracy REAL,
  train_seconds REAL,
  params INTEGER,
  macs INTEGER,
  checkpoint TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX trial_by_status ON trial(experiment_id, status);
CREATE INDEX experiment_by_name ON experiment(name, id);
COMMIT;
PRAGMA application_id = 1851880241;
PRAGMA user_version = 8;
