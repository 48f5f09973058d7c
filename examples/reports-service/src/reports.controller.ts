import { Controller, Get, NotFoundException, Param, ParseIntPipe, Query } from '@nestjs/common';
import { type Report, ReportsRepository } from './reports.repository.js';

@Controller('reports')
export class ReportsController {
  constructor(private readonly reports: ReportsRepository) {}

  @Get(':id')
  async find(@Param('id', ParseIntPipe) id: number, @Query('delayMs') delayMs?: string): Promise<Report> {
    return found(await this.reports.find(id, Number(delayMs ?? 0)));
  }

  @Get(':id/current')
  async findCurrent(@Param('id', ParseIntPipe) id: number): Promise<Report> {
    return found(await this.reports.findCurrent(id));
  }
}

function found(report: Report | undefined): Report {
  if (report === undefined) throw new NotFoundException();
  return report;
}
