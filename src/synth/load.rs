//! Loading a scenario: parsing its TOML and checking every reference and
//! range, so that generation cannot fail half-way; the members of its
//! families are added as functions of their own. Apart from the scenario's
//! types (`scenario.rs`) because it calls on the families and the runtime
//! laws, which use those types.

use std::collections::HashMap;

use super::scenario::{check_dist, Partner, Scenario};

impl Scenario {
    /// Parses a scenario file's text and [validates](Scenario::validate) it;
    /// the members of its families become functions of their own, after
    /// the `[[function]]`s.
    pub fn from_toml(text: &str) -> anyhow::Result<Scenario> {
        let mut s: Scenario = toml::from_str(text)?;
        s.validate()?;
        super::family::add_members(&mut s);
        Ok(s)
    }

    /// Checks references and ranges so generation cannot fail half-way.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::{bail, ensure};
        ensure!(self.ranks >= 1, "ranks must be at least 1");
        ensure!(self.threads >= 1, "threads must be at least 1");
        ensure!(self.steps >= 1, "steps must be at least 1");
        ensure!(
            self.events_per_step >= 2,
            "events_per_step must be at least 2"
        );
        for b in &self.bursts {
            ensure!(b.factor >= 1, "burst factor must be at least 1");
        }
        let mut names = HashMap::new();
        for (i, f) in self.functions.iter().enumerate() {
            if names.insert(f.name.as_str(), i).is_some() {
                bail!("function {:?} is defined twice", f.name);
            }
            super::law::check_function(f)?;
            for c in &f.counters {
                check_dist(&c.value, &format!("{} counter {}", f.name, c.name))?;
            }
            for (k, c) in f.comm.iter().enumerate() {
                ensure!(
                    c.bytes.is_some() || f.message_bytes.is_some(),
                    "function {:?}: comm entry {} has no `bytes` and the function no `message_bytes`",
                    f.name,
                    k + 1
                );
                if let Partner::Named(n) = &c.partner {
                    ensure!(
                        n == "next" || n == "prev",
                        "function {:?}: comm partner must be \"next\", \"prev\" or a rank number, not {n:?}",
                        f.name
                    );
                }
            }
        }
        for fam in &self.families {
            ensure!(
                fam.count >= 1,
                "family {:?}: count must be at least 1",
                fam.name
            );
            ensure!(
                fam.zipf >= 0.0 && fam.zipf.is_finite(),
                "family {:?}: zipf must be a number ≥ 0",
                fam.name
            );
            ensure!(
                !names.contains_key(fam.name.as_str()),
                "family {:?} has the name of a function",
                fam.name
            );
            check_dist(&fam.runtime, &format!("family {} runtime", fam.name))?;
        }
        let is_family = |n: &str| self.families.iter().any(|f| f.name == n);
        let known = |n: &str, what: &str| -> anyhow::Result<()> {
            ensure!(
                names.contains_key(n),
                "{what} refers to unknown function {n:?}"
            );
            Ok(())
        };
        known(&self.root, "root")?;
        for w in &self.wrappers {
            known(w, "wrappers")?;
            ensure!(
                *w != self.root,
                "the root function cannot also be a wrapper"
            );
        }
        for f in &self.functions {
            for c in &f.children {
                if !is_family(&c.function) {
                    known(&c.function, &format!("function {:?} children", f.name))?;
                }
            }
        }
        self.check_acyclic(&names)?;
        for a in &self.anomalies {
            known(&a.function, "anomaly")?;
            ensure!(
                (0.0..=1.0).contains(&a.rate),
                "anomaly rate must be in [0, 1]"
            );
            ensure!(
                a.factor > 0.0 && a.add_us >= 0.0,
                "anomaly factor must be > 0 and add_us >= 0"
            );
            ensure!(
                a.bytes_factor > 0.0 && a.bytes_factor.is_finite(),
                "anomaly bytes_factor must be > 0"
            );
            super::law::check_anomaly(a, &self.functions[names[a.function.as_str()]])?;
        }
        Ok(())
    }

    fn check_acyclic(&self, names: &HashMap<&str, usize>) -> anyhow::Result<()> {
        // Depth-first search with colours: 0 unvisited, 1 on stack, 2 done.
        fn visit(
            i: usize,
            s: &Scenario,
            names: &HashMap<&str, usize>,
            colour: &mut [u8],
        ) -> anyhow::Result<()> {
            match colour[i] {
                1 => anyhow::bail!("call tree has a cycle through {:?}", s.functions[i].name),
                2 => return Ok(()),
                _ => {}
            }
            colour[i] = 1;
            // Family members call nothing: a family ends the path.
            for c in &s.functions[i].children {
                if let Some(&j) = names.get(c.function.as_str()) {
                    visit(j, s, names, colour)?;
                }
            }
            colour[i] = 2;
            Ok(())
        }
        let mut colour = vec![0u8; self.functions.len()];
        for i in 0..self.functions.len() {
            visit(i, self, names, &mut colour)?;
        }
        Ok(())
    }
}
